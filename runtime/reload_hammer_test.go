package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reloadHammer is the shared state of the reload hammer's workers.
type reloadHammer struct {
	t   *testing.T
	rt  *runtime.Runtime
	lab *lab

	mu     sync.Mutex
	turns  []*session.Turn
	leases []*session.Lease
	errs   []string
}

func (h *reloadHammer) unexpected(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, fmt.Sprintf(format, args...))
}

// allowed reports whether err is one of the refusals a racing worker may
// meet: the agent is gone or tombstoned, the session is closing, the
// manager is full, or a bounded wait ran out.
func allowed(err error) bool {
	return err == nil || errors.Is(err, fault.NotFound) || errors.Is(err, fault.NotAvailable) ||
		errors.Is(err, fault.RateLimit) || errors.Is(err, fault.Conflict) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, fault.Interrupted)
}

// reloader alternates two valid documents and one invalid one; a failed
// reload must leave the serving generation exactly as it was.
func (h *reloadHammer) reloader(docs []string, rounds int) {
	for i := range rounds {
		src := docs[i%len(docs)]
		beforeGen := h.rt.GenerationID()
		beforeNote, _ := h.rt.Resource("note")
		beforeBot, _ := h.rt.Agent("bot")
		beforeStable, _ := h.rt.Agent("stable")
		res, err := h.rt.Reload(context.Background(), parse(h.t, src))
		if i%len(docs) == len(docs)-1 {
			note, _ := h.rt.Resource("note")
			bot, _ := h.rt.Agent("bot")
			stable, _ := h.rt.Agent("stable")
			names := h.rt.AgentNames()
			if err == nil || h.rt.GenerationID() != beforeGen || note != beforeNote || bot != beforeBot || stable != beforeStable ||
				!slices.Contains(names, "bot") || !slices.Contains(names, "stable") {
				h.unexpected("failed reload %d changed the serving generation (err %v)", i, err)
			}
			continue
		}
		if err != nil || res.GenerationID != h.rt.GenerationID() {
			h.unexpected("reload %d: %v", i, err)
		}
	}
}

// registrar registers and unregisters a few ids over and over.
func (h *reloadHammer) registrar(r *rand.Rand, rounds int) {
	ctx := context.Background()
	for range rounds {
		id := fmt.Sprintf("dyn-%d", r.IntN(3))
		if r.IntN(2) == 0 {
			if _, err := h.rt.RegisterAgent(ctx, id, labDef(id, false)); !allowed(err) {
				h.unexpected("register %s: %v", id, err)
			}
			continue
		}
		timeout := time.Duration(1+r.IntN(20)) * time.Millisecond
		if err := h.rt.UnregisterAgent(ctx, id, runtime.WithRemoveTimeout(timeout)); !allowed(err) {
			h.unexpected("unregister %s: %v", id, err)
		}
	}
}

// turner opens sessions, starts turns, steers them and sometimes waits.
func (h *reloadHammer) turner(r *rand.Rand, rounds int) {
	ctx := context.Background()
	agents := []string{"bot", "stable", "dyn-0", "dyn-1", "dyn-2"}
	for range rounds {
		key := session.Key{AgentID: agents[r.IntN(len(agents))], ContextID: fmt.Sprintf("c%d", r.IntN(4))}
		lease, err := h.rt.Sessions().Open(ctx, key)
		if err != nil {
			if !allowed(err) {
				h.unexpected("open %s: %v", key, err)
			}
			continue
		}
		h.mu.Lock()
		h.leases = append(h.leases, lease)
		h.mu.Unlock()
		turn, err := lease.Session().Start(ctx, hello())
		if err != nil {
			if !allowed(err) {
				h.unexpected("start %s: %v", key, err)
			}
			continue
		}
		h.mu.Lock()
		h.turns = append(h.turns, turn)
		h.mu.Unlock()
		_ = turn.Steer(message.NewTextMessage(message.RoleUser, "more"))
		if r.IntN(3) == 0 {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if _, err := turn.Wait(wctx); err != nil {
				h.unexpected("wait %s: %v", turn.RunID(), err)
			}
			cancel()
		}
		if r.IntN(2) == 0 {
			_ = lease.Close()
		}
	}
}

// finish waits for every turn and closes every lease; it returns the
// results by run id.
func (h *reloadHammer) finish() map[string]*agent.Result {
	out := map[string]*agent.Result{}
	for _, turn := range h.turns {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := turn.Wait(ctx)
		cancel()
		if err != nil {
			h.unexpected("wait %s: %v", turn.RunID(), err)
			continue
		}
		out[turn.RunID()] = res
	}
	for _, l := range h.leases {
		_ = l.Close()
	}
	return out
}

// Reload, alternating two valid documents and an invalid one, races
// RegisterAgent, UnregisterAgent, Open, Start, Steer and Wait. Every turn
// runs on one generation from start to end, no generation is closed while a
// turn uses it (the lab engine checks both), failed reloads leave the
// serving generation as it was, and no goroutine is left behind.
//
// REF 1.10.5: in-flight turns always finish on their generation.
// REF 1.10.9: failed reloads change nothing, under load.
func TestReloadHammer(t *testing.T) {
	before := goroutines()
	l := newLab()
	catalog := "  dynamic_catalog: {tools: {default: tools}}\n"
	docs := []string{
		labDoc("", catalog+"  sessions: {max_sessions: 64}\n"),
		labDoc("", catalog+"  sessions: {max_sessions: 65}\n"),
		labDoc("\n  bogus: {kind: tool.Assembly, impl: bogus}", "  dynamic_catalog: {tools: {default: bogus}}\n"),
	}
	log := &closeLog{}
	reg := testRegistry(t, log)
	reg.MustRegister(labFactory(l, nil))
	rt, err := runtime.NewBuilder(reg).Build(context.Background(), parse(t, docs[0]))
	require.NoError(t, err)
	_, err = rt.RegisterAgent(context.Background(), "stable", labDef("Stable", false))
	require.NoError(t, err)
	h := &reloadHammer{t: t, rt: rt, lab: l}

	var wg sync.WaitGroup
	wg.Go(func() { h.reloader(docs, 45) })
	for i := range 3 {
		r := rand.New(rand.NewPCG(uint64(i), 1))
		wg.Go(func() { h.registrar(r, 60) })
	}
	for i := range 8 {
		r := rand.New(rand.NewPCG(uint64(i), 2))
		wg.Go(func() { h.turner(r, 60) })
	}
	wg.Wait()
	results := h.finish()
	require.NoError(t, rt.Close())

	assert.Empty(t, h.errs)
	assert.Empty(t, l.problems(), "no turn saw a closed generation or another generation's host")
	completed := 0
	for run, res := range results {
		if res.Status == agent.StatusCompleted {
			completed++
			assert.NotNil(t, l.engineFor(run), "run %s ran on an engine", run)
		}
	}
	assert.Positive(t, completed, "the hammer ran turns")
	assert.Equal(t, 0, l.live(), "every generation was closed")
	t.Logf("%d turns (%d completed), %d engines built", len(results), completed, l.serial.Load())
	noLeak(t, before)
}
