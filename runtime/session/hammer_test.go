package session_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hammer is the shared state of the hammer test's workers.
type hammer struct {
	t   *testing.T
	m   *session.Manager
	eng *agenttest.Engine

	mu       sync.Mutex
	turns    []*session.Turn
	byRun    map[string]*session.Turn
	accepted map[string]bool // steer messages Steer accepted
}

func (h *hammer) addTurn(tr *session.Turn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.turns = append(h.turns, tr)
	h.byRun[tr.RunID()] = tr
}

func (h *hammer) randomTurn(r *rand.Rand) *session.Turn {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.turns) == 0 {
		return nil
	}
	// Mostly recent turns: they are the live ones.
	n := len(h.turns)
	return h.turns[max(0, n-1-r.IntN(min(n, 6)))]
}

func (h *hammer) turn(runID string) *session.Turn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byRun[runID]
}

// hammerScript gives each engine call one of a few shapes; every shape ends
// on its own, on an interrupt, on a reply or on a cancel.
func hammerScript(call int, _ agent.Run) []agenttest.Step {
	pause := agenttest.Func(func(ctx context.Context, _ *agenttest.Env) error {
		select {
		case <-time.After(time.Duration(call%3) * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	switch call % 5 {
	case 0:
		return []agenttest.Step{agenttest.Emit("a"), agenttest.DrainSteer(), agenttest.PollInterrupt(), agenttest.Reply("done")}
	case 1:
		return []agenttest.Step{agenttest.DrainSteer(), agenttest.AskUser("q?"), agenttest.DrainSteer()}
	case 2:
		return []agenttest.Step{agenttest.Checkpoint(), agenttest.WaitInterrupt(), agenttest.DrainSteer()}
	case 3:
		return []agenttest.Step{agenttest.Emit("b"), pause, agenttest.DrainSteer(), pause, agenttest.Say("c")}
	}
	return []agenttest.Step{pause, agenttest.DrainSteer(), agenttest.Checkpoint(), agenttest.PollInterrupt()}
}

// work runs random operations against the shared keys until stop is
// closed, and at least minOps of them.
func (h *hammer) work(id, minOps int, keys []session.Key, stop <-chan struct{}) {
	r := rand.New(rand.NewPCG(uint64(id), 7))
	ctx := context.Background()
	var leases []*session.Lease
	defer func() {
		for _, l := range leases {
			_ = l.Close()
		}
	}()
	sink := agent.StreamSinkFunc(func(context.Context, event.Envelope, event.StreamDeltaPayload) error { return nil })
	for i := 0; ; i++ {
		if i >= minOps {
			select {
			case <-stop:
				return
			default:
			}
		}
		k := keys[r.IntN(len(keys))]
		switch op := r.IntN(12); {
		case op < 2:
			if l, err := h.m.Open(ctx, k); err == nil {
				leases = append(leases, l)
			}
		case op < 4 && len(leases) > 0:
			l := leases[r.IntN(len(leases))]
			var specs []session.SinkSpec
			if r.IntN(2) == 0 {
				specs = append(specs, session.SinkSpec{ID: "raw", Sink: sink})
			}
			sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			tr, err := l.Session().Start(sctx, ask("hi"), specs...)
			cancel()
			if err == nil {
				h.addTurn(tr)
			}
		case op == 4 && len(leases) > 0:
			if tr, err := leases[r.IntN(len(leases))].Session().Resume(ctx); err == nil {
				h.addTurn(tr)
			}
		case op == 5 || op >= 10:
			if tr := h.randomTurn(r); tr != nil {
				text := fmt.Sprintf("w%d-%d", id, i)
				if tr.Steer(userMsg(text)) == nil {
					h.mu.Lock()
					h.accepted[text] = true
					h.mu.Unlock()
				}
			}
		case op == 6:
			if tr := h.randomTurn(r); tr != nil {
				_ = tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel})
			}
		case op == 7:
			dctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
			_ = h.m.DeleteSession(dctx, k)
			cancel()
		case op == 8 && len(leases) > 0:
			j := r.IntN(len(leases))
			_ = leases[j].Close()
			_ = leases[j].Close()
			leases = append(leases[:j], leases[j+1:]...)
		default:
			if tr := h.randomTurn(r); tr != nil && r.IntN(4) == 0 {
				tr.Cancel()
			}
		}
	}
}

// answer replies to prompts as they are asked, sometimes twice, sometimes
// not at all.
func (h *hammer) answer(sub event.Subscription, done chan<- struct{}) {
	defer close(done)
	r := rand.New(rand.NewPCG(99, 1))
	for env := range sub.C() {
		p := decode[session.PromptRequested](h.t, env)
		tr := h.turn(p.RunID)
		if tr == nil || r.IntN(5) == 0 {
			continue
		}
		_ = tr.Reply(context.Background(), p.PromptID, textReply("yes"))
		if r.IntN(4) == 0 {
			_ = tr.Reply(context.Background(), p.PromptID, textReply("again"))
		}
	}
}

// The hammer races every operation of the package on a few shared keys,
// then closes the manager while the workers still run.
// REF 2.1.5
// REF 2.2.2
// REF 2.3.4
// REF 2.8.8
func TestHammer(t *testing.T) { // not parallel: counts goroutines
	leftBehind := goroutineBaseline(t)
	const workers, ops = 8, 200
	bus := event.NewMemoryBus()
	store := checkpoint.NewMemory()
	res := newAgents()
	eng := agenttest.NewScript(hammerScript)
	res.put(botID, resumable{Engine: eng})
	e := &env{t: t, bus: bus, agents: res}
	m, err := session.NewManagerWithConfig(e.deps(store, true), session.Config{Tunables: session.Tunables{IdleTimeout: 2 * time.Millisecond, SinkBuffer: 4}, CloseTimeout: time.Second, FinalizeBudget: time.Second})
	require.NoError(t, err)
	h := &hammer{t: t, m: m, eng: eng, byRun: map[string]*session.Turn{}, accepted: map[string]bool{}}

	subCtx, stopSub := context.WithCancel(context.Background())
	sub, err := bus.Subscribe(subCtx, session.PatternPromptRequested(), event.SubConfig{BufferSize: 1024, Backpressure: event.Block})
	require.NoError(t, err)
	answered := make(chan struct{})
	go h.answer(sub, answered)

	keys := []session.Key{key("k1"), key("k2"), key("k3")}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range workers {
		wg.Go(func() { h.work(w, ops, keys, stop) })
	}
	time.Sleep(300 * time.Millisecond) // the workers hammer, then Close races them
	closed := make(chan struct{})
	go func() {
		_ = m.Close()
		close(closed)
	}()
	within(t, closed, "Manager.Close")
	close(stop)
	wg.Wait()
	require.NoError(t, m.Close())
	for _, r := range eng.Runs() {
		if !r.Done {
			eventually(t, func() bool { return runsDone(eng) }, "every engine run returns after Close")
			break
		}
	}
	runs := len(eng.Runs())

	h.mu.Lock()
	turns := append([]*session.Turn(nil), h.turns...)
	h.mu.Unlock()
	require.NotEmpty(t, turns)
	for _, tr := range turns {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		_, err := tr.Wait(ctx)
		cancel()
		require.NotErrorIs(t, err, context.DeadlineExceeded, "Wait of run %s returned", tr.RunID())
	}

	// No steer message was both delivered and reported pending; every
	// accepted message is exactly one of them.
	delivered := map[string]int{}
	for _, r := range eng.Runs() {
		for _, msg := range r.Steered {
			delivered[msg.Text()]++
		}
	}
	pending := map[string]bool{}
	for _, tr := range turns {
		res, _ := tr.Wait(context.Background())
		left := tr.DrainSteer()
		if res != nil {
			n, _ := res.State[session.StatePendingSteer].(int)
			assert.Equal(t, n, len(left), "run %s: the pending count matches what is left", tr.RunID())
		}
		for _, msg := range left {
			pending[msg.Text()] = true
		}
	}
	for text, n := range delivered {
		assert.Equal(t, 1, n, "%s delivered once", text)
		assert.False(t, pending[text], "%s was delivered and reported pending", text)
	}
	for text := range h.accepted {
		assert.True(t, delivered[text] == 1 || pending[text], "%s was accepted but is nowhere", text)
	}
	assert.Equal(t, runs, len(eng.Runs()), "no run started after Close")
	t.Logf("%d turns, %d engine runs, %d steer messages accepted, %d delivered, %d pending",
		len(turns), len(eng.Runs()), len(h.accepted), len(delivered), len(pending))

	stopSub()
	_ = sub.Close()
	<-answered
	require.NoError(t, bus.Close())
	leftBehind()
}

func runsDone(eng *agenttest.Engine) bool {
	for _, r := range eng.Runs() {
		if !r.Done {
			return false
		}
	}
	return true
}
