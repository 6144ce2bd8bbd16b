package runtime_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const agentDoc = `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
agents:
  bot:
    card: {name: Bot}
    engine: {kind: agent.Engine, impl: script}
runtime:
  event_bus: events
`

// buildAgent builds agentDoc with e as the engine of agent "bot".
func buildAgent(t *testing.T, e *agenttest.Engine, extra ...resource.Factory) *runtime.Runtime {
	t.Helper()
	reg := testRegistry(t, nil)
	reg.MustRegister(agenttest.Factory("script", e))
	reg.MustRegister(extra...)
	rt, err := runtime.NewBuilder(reg).Build(context.Background(), parse(t, agentDoc))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

var botKey = session.Key{AgentID: "bot", ContextID: "c1"}

func hello() agent.Request {
	return agent.Request{Message: message.NewTextMessage(message.RoleUser, "hello")}
}

// A turn started through Runtime.Sessions runs the deployed agent and
// streams its deltas to the turn's sinks.
func TestSessionsRunDeployedAgent(t *testing.T) {
	rt := buildAgent(t, agenttest.New(agenttest.Say("hi there")))
	lease, err := rt.Sessions().Open(context.Background(), botKey)
	require.NoError(t, err)
	defer lease.Close()

	var mu sync.Mutex
	var text string
	sink := agent.StreamSinkFunc(func(_ context.Context, _ event.Envelope, d event.StreamDeltaPayload) error {
		if d.Type == event.DeltaPart && d.Part != nil {
			mu.Lock()
			text += d.Part.Text
			mu.Unlock()
		}
		return nil
	})
	turn, err := lease.Session().Start(context.Background(), hello(), session.SinkSpec{ID: "console", Sink: sink})
	require.NoError(t, err)
	res, err := turn.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, res.Status)
	require.Len(t, res.Output, 1)
	assert.Equal(t, "hi there", res.Output[0].Text())
	mu.Lock()
	assert.Equal(t, "hi there", text)
	mu.Unlock()
}

// REF 1.9.1, 1.9.2, 1.9.3, 1.9.4: Drain refuses new leases and turns,
// never interrupts the running one, stays draining when its ctx ends, and
// returns nil once idle; Close works after it, Drain after Close is
// NotAvailable.
func TestDrain(t *testing.T) {
	gate := agenttest.NewGate()
	e := agenttest.New(agenttest.WaitGate(gate), agenttest.Say("done"))
	rt := buildAgent(t, e)
	lease, err := rt.Sessions().Open(context.Background(), botKey)
	require.NoError(t, err)
	turn, err := lease.Session().Start(context.Background(), hello())
	require.NoError(t, err)
	<-gate.Reached()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, rt.Drain(ctx), context.DeadlineExceeded, "1.9.3: the ctx error comes back")

	_, err = rt.Sessions().Open(context.Background(), session.Key{AgentID: "bot", ContextID: "c2"})
	assert.ErrorIs(t, err, session.ErrManagerDraining, "1.9.1: new leases are refused")
	_, err = lease.Session().Start(context.Background(), hello())
	assert.ErrorIs(t, err, session.ErrManagerDraining, "1.9.1: new turns on open leases are refused")
	assert.Equal(t, session.TurnRunning, turn.State(), "1.9.2: Drain never interrupts")

	gate.Open()
	res, err := turn.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, res.Status, "the turn finishes naturally")
	require.NoError(t, rt.Drain(context.Background()), "1.9.3: a repeated Drain returns nil once idle")
	_, err = rt.Sessions().Open(context.Background(), session.Key{AgentID: "bot", ContextID: "c3"})
	assert.ErrorIs(t, err, session.ErrManagerDraining, "1.9.3: the runtime stays draining")

	require.NoError(t, lease.Close())
	require.NoError(t, rt.Close(), "1.9.4: Close works after Drain")
	err = rt.Drain(context.Background())
	assert.ErrorIs(t, err, fault.NotAvailable, "1.9.4: Drain after Close")
}

// REF 1.9.5: Drain is serialized with Close through the lifecycle
// lock: a Close that arrives while Drain waits runs after it.
func TestDrainSerializedWithClose(t *testing.T) {
	gate := agenttest.NewGate()
	rt := buildAgent(t, agenttest.New(agenttest.WaitGate(gate)))
	lease, err := rt.Sessions().Open(context.Background(), botKey)
	require.NoError(t, err)
	_, err = lease.Session().Start(context.Background(), hello())
	require.NoError(t, err)
	<-gate.Reached()

	ctx, cancel := context.WithCancel(context.Background())
	drained := make(chan error, 1)
	go func() { drained <- rt.Drain(ctx) }()
	require.Eventually(t, rt.Sessions().Draining, 5*time.Second, time.Millisecond)
	closed := make(chan struct{})
	go func() { _ = rt.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close ran while Drain held the lifecycle lock")
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	assert.ErrorIs(t, <-drained, context.Canceled)
	gate.Open() // the gate step does not watch interrupts; let the turn end
	<-closed
}

// REF 1.4.3, 1.4.4: Close interrupts active turns with host_shutdown
// before it tears the rest down; Open afterwards is NotAvailable.
func TestCloseInterruptsTurns(t *testing.T) {
	e := agenttest.New(agenttest.WaitInterrupt())
	rt := buildAgent(t, e)
	lease, err := rt.Sessions().Open(context.Background(), botKey)
	require.NoError(t, err)
	turn, err := lease.Session().Start(context.Background(), hello())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(e.Runs()) == 1 }, 5*time.Second, time.Millisecond)

	require.NoError(t, rt.Close())
	res, err := turn.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, agent.StatusInterrupted, res.Status)
	var ie *agent.InterruptedError
	require.ErrorAs(t, res.Err, &ie)
	assert.Equal(t, agent.CauseHostShutdown, ie.Interrupt.Cause)

	_, err = rt.Sessions().Open(context.Background(), botKey)
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.ErrorIs(t, err, session.ErrManagerClosed)
}

// binder is a resource that wants the session manager.
type binder struct {
	mu  sync.Mutex
	got *session.Manager
	err error
}

func (b *binder) BindSessionManager(m *session.Manager) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = m
	return b.err
}

// REF 1.3.8: at most one resource implements session.ManagerBinder;
// it is bound to the runtime's manager, and a bind error fails Build.
func TestManagerBinder(t *testing.T) {
	var made []*binder
	newReg := func(fail error) *resource.Registry {
		reg := testRegistry(t, nil)
		reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "test.Binder"}, func(context.Context, resource.Input) (any, error) {
			b := &binder{err: fail}
			made = append(made, b)
			return b, nil
		}))
		return reg
	}
	doc := `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  delegation: {kind: test.Binder}
runtime:
  event_bus: events
`
	rt, err := runtime.NewBuilder(newReg(nil)).Build(context.Background(), parse(t, doc))
	require.NoError(t, err)
	defer rt.Close()
	require.Len(t, made, 1)
	assert.Same(t, rt.Sessions(), made[0].got)

	_, err = runtime.NewBuilder(newReg(nil)).Build(context.Background(), parse(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  a: {kind: test.Binder}
  b: {kind: test.Binder}
runtime:
  event_bus: events
`))
	assert.ErrorIs(t, err, fault.Conflict)

	boom := errors.New("boom")
	_, err = runtime.NewBuilder(newReg(boom)).Build(context.Background(), parse(t, doc))
	assert.ErrorIs(t, err, boom)
}

// REF 1.1, 1.3.5: the runtime: section's sessions tunables reach the
// session manager.
func TestSessionTunablesFromDocument(t *testing.T) {
	rt, _ := build(t, minimalDoc+`  sessions:
    idle_timeout: 90s
    max_sessions: 3
    sink_buffer: 17
    delivery_concurrency: 2
    speculative_buffer_events: 5
    speculative_buffer_bytes: 4096
`)
	assert.Equal(t, session.Tunables{
		IdleTimeout: 90 * time.Second, MaxSessions: 3, SinkBuffer: 17, DeliveryConcurrency: 2,
		SpeculativeBufferEvents: 5, SpeculativeBufferBytes: 4096,
	}, rt.Sessions().Tunables())
}

// REF 5.5.5: the host a deployed agent's turn runs on says when the turn
// was interrupted (agent.InterruptClock), through every layer the runtime
// and the session wrap it in, so that an engine's grace runs from
// Turn.Interrupt.
func TestTurnHostTellsWhenInterrupted(t *testing.T) {
	type seen struct {
		found, ok bool
		at        time.Time
	}
	got := make(chan seen, 1)
	e := agenttest.New(agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
		select {
		case <-env.Host().Interrupts():
		case <-ctx.Done():
			return ctx.Err()
		}
		clock, found := agent.CapabilityFromHost[agent.InterruptClock](env.Host())
		var s seen
		if s.found = found; found {
			s.at, s.ok = clock.InterruptSent()
		}
		got <- s
		return nil
	}))
	rt := buildAgent(t, e)
	lease, err := rt.Sessions().Open(context.Background(), botKey)
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().Start(context.Background(), hello())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(e.Runs()) == 1 }, 5*time.Second, time.Millisecond)
	before := time.Now()
	require.NoError(t, turn.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	after := time.Now()
	s := <-got
	require.True(t, s.found, "the turn's host has an InterruptClock")
	require.True(t, s.ok)
	assert.WithinRange(t, s.at, before, after)
	_, err = turn.Wait(context.Background())
	require.NoError(t, err)
}
