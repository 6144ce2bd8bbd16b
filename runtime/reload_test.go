package runtime_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshot is what a failed reload must leave exactly as it was.
type snapshot struct {
	gen      uint64
	note     any
	bot      *agent.Agent
	names    []string
	sessions int
	agents   map[string]*agent.Agent
}

func snap(rt *runtime.Runtime) snapshot {
	s := snapshot{gen: rt.GenerationID(), names: rt.AgentNames(), sessions: rt.Sessions().Sessions(), agents: map[string]*agent.Agent{}}
	s.note, _ = rt.Resource("note")
	for _, n := range s.names {
		s.agents[n], _ = rt.Agent(n)
	}
	s.bot = s.agents["bot"]
	return s
}

// rebuildEvents decodes the recorded rebuild events.
func rebuildEvents(t *testing.T, envs []event.Envelope) []event.RebuildPayload {
	t.Helper()
	out := make([]event.RebuildPayload, len(envs))
	for i, e := range envs {
		require.NoError(t, e.Decode(&out[i]))
	}
	return out
}

// REF 1.10: a nil ctx, document or option is Validation.
// REF 1.10.1: after Close Reload is NotAvailable; it waits for the
// lifecycle lock that Drain holds.
// REF 1.9.6: once draining, Reload is NotAvailable.
func TestReloadArgumentsAndLifecycle(t *testing.T) {
	l, g := newLab(), newGate()
	src := labDoc("", "")
	rt, _ := buildLab(t, l, g, src)
	ctx := context.Background()
	var nilCtx context.Context
	_, err := rt.Reload(nilCtx, parse(t, src))
	assert.ErrorIs(t, err, fault.Validation)
	_, err = rt.Reload(ctx, nil)
	assert.ErrorIs(t, err, fault.Validation)
	_, err = rt.ReloadWithConfig(nilCtx, parse(t, src), runtime.ReloadConfig{Force: true})
	assert.ErrorIs(t, err, fault.Validation)
	_, err = rt.ReloadWithConfig(ctx, nil, runtime.ReloadConfig{Force: true})
	assert.ErrorIs(t, err, fault.Validation)

	_, err = rt.RegisterAgent(ctx, "gated", labDef("Gated", true))
	require.NoError(t, err)
	lease, err := rt.Sessions().Open(ctx, session.Key{AgentID: "gated", ContextID: "c"})
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().Start(ctx, hello())
	require.NoError(t, err)
	<-g.reached
	dctx, cancel := context.WithCancel(ctx)
	drained := make(chan error, 1)
	go func() { drained <- rt.Drain(dctx) }()
	require.Eventually(t, rt.Sessions().Draining, 5*time.Second, time.Millisecond)
	reloaded := make(chan error, 1)
	go func() {
		_, err := rt.Reload(ctx, parse(t, labDoc("", "  sessions: {max_sessions: 7}\n")))
		reloaded <- err
	}()
	select {
	case err := <-reloaded:
		t.Fatalf("Reload ran while Drain held the lifecycle lock: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	<-drained
	err = <-reloaded
	assert.ErrorIs(t, err, runtime.ErrDraining, "1.9.6")
	assert.ErrorIs(t, err, fault.NotAvailable)
	g.Open()
	_, err = turn.Wait(ctx)
	require.NoError(t, err)

	require.NoError(t, rt.Close())
	_, err = rt.Reload(ctx, parse(t, src))
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.ErrorIs(t, err, runtime.ErrClosed)
}

// REF 1.10.2: every attempt gets its id before validation, is
// announced with started and ends in exactly one of completed or failed.
// REF 1.10.7: completed and ReloadResult carry the ids and the
// sorted rebound and drained agents.
func TestReloadGenerationIDsAndEvents(t *testing.T) {
	l := newLab()
	rt, _ := buildLab(t, l, nil, labDoc("", "")+`  dynamic_catalog: {tools: {default: tools}}
`)
	rec := attach(t, rt, event.PatternRuntimeRebuild())
	ctx := context.Background()
	for _, id := range []string{"zeta", "alpha"} {
		_, err := rt.RegisterAgent(ctx, id, labDef(id, false))
		require.NoError(t, err)
	}
	bad := parse(t, labDoc("", ""))
	bad.Runtime = []byte(`{"event_bus": "events", "bogus": 1}`)
	_, err := rt.Reload(ctx, bad)
	require.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, "reload generation 2")
	assert.Equal(t, uint64(1), rt.GenerationID())

	// The new document drops "bot" and deploys "writer".
	next := parse(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  tools: {kind: tool.Assembly, impl: test}
agents:
  writer:
    card: {name: Writer}
    engine: {kind: agent.Engine, impl: lab, deps: {bus: events}}
runtime:
  event_bus: events
  dynamic_catalog: {tools: {default: tools}}
`)
	res, err := rt.Reload(ctx, next)
	require.NoError(t, err)
	assert.Equal(t, &runtime.ReloadResult{GenerationID: 3, PreviousID: 1,
		ReboundAgents: []string{"alpha", "zeta"}, DrainedAgents: []string{"bot"}}, res)
	assert.Equal(t, uint64(3), rt.GenerationID())
	assert.Equal(t, []string{"alpha", "writer", "zeta"}, rt.AgentNames())

	envs := rec.waitFor(t, 4)
	require.Len(t, envs, 4)
	assert.Equal(t, []string{event.SubjectRebuildStarted(), event.SubjectRebuildFailed(),
		event.SubjectRebuildStarted(), event.SubjectRebuildCompleted()}, rec.subjects())
	p := rebuildEvents(t, envs)
	assert.Equal(t, event.RebuildPayload{GenerationID: 2}, p[0])
	assert.Equal(t, uint64(2), p[1].GenerationID)
	assert.Contains(t, p[1].Error, "bogus")
	assert.Equal(t, event.RebuildPayload{GenerationID: 3}, p[2])
	assert.Equal(t, event.RebuildPayload{GenerationID: 3, PreviousGenerationID: 1,
		ReboundAgents: []string{"alpha", "zeta"}, DrainedAgents: []string{"bot"}}, p[3])
	assert.Empty(t, l.problems())
}

// An unchanged document is reported and not rebuilt; ReloadConfig.Force rebuilds it.
func TestReloadUnchanged(t *testing.T) {
	l := newLab()
	reg := testRegistry(t, nil)
	reg.MustRegister(labFactory(l, nil))
	dir := t.TempDir()
	parseIn := func(src string) *deploy.Document {
		doc, err := deploy.ParseWithConfig([]byte(src), deploy.ParseConfig{Filename: "deploy.yaml", BaseDir: dir})
		require.NoError(t, err)
		return doc
	}
	rt, err := runtime.NewBuilder(reg).Build(context.Background(), parseIn(labDoc("", "")))
	require.NoError(t, err)
	defer rt.Close()
	rec := attach(t, rt, event.PatternRuntimeRebuild())
	ctx := context.Background()
	// The same content written differently is the same document.
	doc := parseIn(strings.Replace(labDoc("", ""), "runtime:\n  event_bus: events", "runtime: {event_bus: events}", 1))
	res, err := rt.Reload(ctx, doc)
	require.NoError(t, err)
	assert.Equal(t, &runtime.ReloadResult{GenerationID: 1, PreviousID: 1, Unchanged: true}, res)
	assert.Equal(t, 1, int(l.serial.Load()), "nothing was built")
	assert.Empty(t, rec.subjects())

	res, err = rt.ReloadWithConfig(ctx, doc, runtime.ReloadConfig{Force: true})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.GenerationID)
	assert.False(t, res.Unchanged)
	assert.Equal(t, 2, int(l.serial.Load()))
}

// sharedBusFactory is event.Bus/shared: every New returns the same bus.
func sharedBusFactory(bus *event.MemoryBus) resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: "event.Bus", Impl: "shared"},
		func(context.Context, resource.Input) (any, error) { return bus, nil })
}

// binderFactory is test.Binder: a session.ManagerBinder whose bind fails
// when its settings say so.
func binderFactory(binds *atomic.Int32) resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: "test.Binder"}, func(_ context.Context, in resource.Input) (any, error) {
		var s struct {
			Fail bool `json:"fail"`
		}
		if err := resource.DecodeSettings(in.Settings, &s); err != nil {
			return nil, err
		}
		var err error
		if s.Fail {
			err = errors.New("bind refused")
		}
		return &countingBinder{binds: binds, err: err}, nil
	})
}

type countingBinder struct {
	binds *atomic.Int32
	err   error
}

func (b *countingBinder) BindSessionManager(*session.Manager) error {
	b.binds.Add(1)
	return b.err
}

// REF 1.10.3: each step of the build pipeline can fail; every failure
// publishes failed, leaves the old generation serving and returns the
// error.
// REF 1.10.9: a failed reload leaves Resource, Agent, AgentNames and
// sessions exactly as they were, and the counter still advances.
func TestReloadFailuresLeaveTheOldGeneration(t *testing.T) {
	base := labDoc("", "")
	withCatalog := base + "  dynamic_catalog: {tools: {default: tools}}\n"
	sharedDoc := "version: v1\nresources:\n  events: {kind: event.Bus, impl: shared}\nruntime:\n  event_bus: events\n"
	tests := []struct {
		name, from, doc string
		kind            *fault.Kind
		msg             string
	}{
		{"1.10.3.1 validate", withCatalog, base + "  sessions: {sink_buffer: 0}\n", fault.Validation, "sink_buffer"},
		{"1.10.3.2 deploy", withCatalog, labDoc("\n  extra: {kind: test.Missing}", ""), nil, "test.Missing"},
		{"1.10.3.3 bind manager", withCatalog, labDoc("\n  binder: {kind: test.Binder, settings: {fail: true}}", ""), nil, "bind refused"},
		{"1.10.3.4 resume needs a deleting store", withCatalog, labDoc("\n  store: {kind: test.Store, impl: plain}",
			"  checkpoint_store: store\n  sessions: {resume: true}\n"), fault.Validation, "CheckpointDeleter"},
		{"1.10.3.5 shared bus", sharedDoc, sharedDoc, fault.Conflict, "needs its own bus"},
		{"1.10.3.7 catalog", withCatalog, labDoc("\n  bogus: {kind: tool.Assembly, impl: bogus}", "  dynamic_catalog: {tools: {default: bogus}}\n"), fault.Validation, "not a tool.Assembly"},
		{"1.10.3.8 rebind without catalog", withCatalog, base, fault.Validation, "needs runtime.dynamic_catalog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLab()
			shared := event.NewMemoryBus()
			defer shared.Close()
			var binds atomic.Int32
			rt, _ := buildLab(t, l, nil, tt.from, sharedBusFactory(shared), binderFactory(&binds))
			rec := attach(t, rt, event.PatternRuntimeRebuild())
			ctx := context.Background()
			if tt.from == withCatalog {
				_, err := rt.RegisterAgent(ctx, "qa", labDef("QA", false), runtime.WithToolAssembly("tools"))
				require.NoError(t, err)
				lease, err := rt.Sessions().Open(ctx, session.Key{AgentID: "qa", ContextID: "c"})
				require.NoError(t, err)
				defer lease.Close()
			}
			before, engines := snap(rt), l.live()

			_, err := rt.Reload(ctx, parse(t, tt.doc))
			require.Error(t, err)
			if tt.kind != nil {
				assert.ErrorIs(t, err, tt.kind)
			}
			assert.ErrorContains(t, err, tt.msg)
			assert.Equal(t, before, snap(rt), "1.10.9: the old generation serves on")
			assert.Equal(t, engines, l.live(), "everything the attempt built is closed")
			assert.Equal(t, []string{event.SubjectRebuildStarted(), event.SubjectRebuildFailed()}, subjectsOf(rec.waitFor(t, 2)))
			env, err := event.NewEnvelope(ctx, "x.y", nil)
			require.NoError(t, err)
			assert.NoError(t, shared.Publish(ctx, env), "1.10.3.5: an abort leaves a shared bus open")

			res, err := rt.Reload(ctx, parse(t, withCatalog+"  sessions: {max_sessions: 9}\n"))
			require.NoError(t, err, "a later reload works")
			assert.Equal(t, uint64(3), res.GenerationID, "1.10.9: the failed attempt used id 2")
			assert.Empty(t, l.problems())
		})
	}
}

func subjectsOf(envs []event.Envelope) []string {
	out := make([]string, len(envs))
	for i, e := range envs {
		out[i] = e.Subject
	}
	return out
}

// REF 1.10.3.6: a decorator error during a reload aborts it.
// REF 1.12.4: both decorators are re-applied to each generation,
// the result decorator with the new generation's result.
func TestReloadReappliesDecorators(t *testing.T) {
	l := newLab()
	var calls atomic.Int32
	var results []*deploy.Result
	failNext := atomic.Bool{}
	deco := func(b *runtime.Builder) {
		require.NoError(t, b.WithHostFactory(func(f session.HostFactory) (session.HostFactory, error) {
			calls.Add(1)
			if failNext.Load() {
				return nil, errors.New("decorator refused")
			}
			return f, nil
		}))
		require.NoError(t, b.WithResultHostFactory(func(r *deploy.Result, f session.HostFactory) (session.HostFactory, error) {
			results = append(results, r)
			return f, nil
		}))
	}
	reg := testRegistry(t, nil)
	reg.MustRegister(labFactory(l, nil))
	b := runtime.NewBuilder(reg)
	deco(b)
	rt, err := b.Build(context.Background(), parse(t, labDoc("", "")))
	require.NoError(t, err)
	defer rt.Close()

	next := parse(t, labDoc("", "  sessions: {max_sessions: 5}\n"))
	_, err = rt.Reload(context.Background(), next)
	require.NoError(t, err)
	assert.Equal(t, int32(2), calls.Load())
	require.Len(t, results, 2)
	assert.NotSame(t, results[0], results[1])
	assert.Same(t, next, results[1].Document(), "the result decorator sees the new result")

	failNext.Store(true)
	_, err = rt.Reload(context.Background(), parse(t, labDoc("", "  sessions: {max_sessions: 6}\n")))
	assert.ErrorContains(t, err, "decorator refused")
	assert.Equal(t, uint64(2), rt.GenerationID())
	assert.Equal(t, 5, rt.Sessions().Tunables().MaxSessions, "the tunables are those of the serving generation")
	assert.Empty(t, l.problems())
}

// REF 1.10.3.9: a deployed agent the new document drops is drained
// before the swap; a drain that fails aborts and clears its tombstone.
// REF 1.10.3.10: the new document's agents lose their tombstones.
func TestReloadDrainsDroppedAgents(t *testing.T) {
	l, g := newLab(), newGate()
	gated := `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
agents:
  bot:
    card: {name: Bot}
    engine: {kind: agent.Engine, impl: lab, deps: {bus: events}, settings: {gate: true}}
runtime:
  event_bus: events
`
	rt, _ := buildLab(t, l, g, gated)
	ctx := context.Background()
	lease, err := rt.Sessions().Open(ctx, botKey)
	require.NoError(t, err)
	turn, err := lease.Session().Start(ctx, hello())
	require.NoError(t, err)
	<-g.reached
	without := `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
runtime:
  event_bus: events
`
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, err = rt.Reload(short, parse(t, without))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, session.TurnRunning, turn.State())
	other, err := rt.Sessions().Open(ctx, session.Key{AgentID: "bot", ContextID: "other"})
	require.NoError(t, err, "the abort cleared the tombstone")
	require.NoError(t, other.Close())

	// 1.10.3.10: a tombstone on an agent of the new document is cleared.
	require.NoError(t, rt.Sessions().RemoveAgent(ctx, "writer"))
	withWriter := without[:len(without)-len("runtime:\n  event_bus: events\n")] + `agents:
  writer:
    card: {name: Writer}
    engine: {kind: agent.Engine, impl: lab, deps: {bus: events}}
runtime:
  event_bus: events
`
	done := make(chan error, 1)
	go func() {
		res, err := rt.Reload(ctx, parse(t, withWriter))
		if err == nil && len(res.DrainedAgents) != 1 {
			err = errors.New("bot was not reported drained")
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Reload swapped while a dropped agent's turn was active: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.Open()
	require.NoError(t, <-done)
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, res.Status, "the drain let the turn finish")
	_, err = lease.Session().Start(ctx, hello())
	assert.ErrorIs(t, err, session.ErrSessionClosing, "the dropped agent's sessions are closed")
	_, err = rt.Sessions().Open(ctx, botKey)
	assert.ErrorIs(t, err, fault.NotFound)
	w, err := rt.Sessions().Open(ctx, session.Key{AgentID: "writer", ContextID: "c"})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Empty(t, l.problems())
}

// REF 1.10.3.11: the tunables of the new document apply.
func TestReloadUpdatesTunables(t *testing.T) {
	rt, _ := buildLab(t, newLab(), nil, labDoc("", ""))
	_, err := rt.Reload(context.Background(), parse(t, labDoc("", "  sessions: {max_sessions: 3, idle_timeout: 2m, sink_buffer: 9}\n")))
	require.NoError(t, err)
	tun := rt.Sessions().Tunables()
	assert.Equal(t, 3, tun.MaxSessions)
	assert.Equal(t, 2*time.Minute, tun.IdleTimeout)
	assert.Equal(t, 9, tun.SinkBuffer)
}
