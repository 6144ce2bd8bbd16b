package session_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 2.8.1
func TestManagerIdle(t *testing.T) {
	t.Parallel()
	e, g := gatedEnv(t)
	assert.True(t, e.m.Idle(), "a manager with no sessions is idle")
	e.open(key("quiet"))
	assert.True(t, e.m.Idle(), "a session without a turn is idle")
	tr := e.start("c", "hi")
	assert.False(t, e.m.Idle())
	g.Open()
	settle(t, tr)
	eventually(t, e.m.Idle, "idle once the turn settled")
}

// A closing session whose turn has stopped counts as idle, even while its
// entry is still there.
// REF 2.8.1
func TestManagerIdleClosingSession(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	e := newEnv(t, agenttest.New(stubborn(release, nil)))
	tr := e.start("c", "hi")
	require.True(t, session.MarkClosing(e.m, key("c")))
	assert.False(t, e.m.Idle())
	close(release)
	settle(t, tr)
	eventually(t, e.m.Idle, "idle once the turn stopped")
	assert.Equal(t, 1, e.m.Sessions(), "the closing entry is still there")
}

// REF 2.8.2
func TestWaitIdle(t *testing.T) {
	t.Parallel()
	e, g := gatedEnv(t)
	require.NoError(t, e.m.WaitIdle(context.Background()))
	isKind(t, e.m.WaitIdle(nil), fault.Validation) //nolint:staticcheck // nil ctx on purpose
	tr := e.start("c", "hi")
	require.ErrorIs(t, e.m.WaitIdle(expired()), context.DeadlineExceeded)
	assert.Equal(t, session.TurnRunning, tr.State(), "WaitIdle changes nothing")
	assert.False(t, e.m.Draining())
	done := make(chan error, 1)
	go func() { done <- e.m.WaitIdle(context.Background()) }()
	g.Open()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("WaitIdle did not return")
	}
	e.open(key("after")) // still open for business
}

// REF 2.8.3
// REF 1.9.1
// REF 1.9.2
// REF 1.9.3
// REF 1.9.7 (the manager-level primitives behind Runtime.Drain)
func TestDrain(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	eng := agenttest.New(agenttest.WaitGate(g), agenttest.PollInterrupt(), agenttest.Reply("done"))
	e := newDurableEnv(t, resumable{Engine: eng})
	t.Cleanup(g.Open)
	ctx := context.Background()
	isKind(t, e.m.Drain(nil), fault.Validation) //nolint:staticcheck // nil ctx on purpose

	l := e.open(key("c"))
	tr, err := l.Session().Start(ctx, ask("hi"))
	require.NoError(t, err)
	reached(t, g)

	// 1.9.3: ctx expiry returns the ctx error and the manager stays draining.
	require.ErrorIs(t, e.m.Drain(expired()), context.DeadlineExceeded)
	assert.True(t, e.m.Draining())

	// 1.9.1: no new lease, no new turn, no resume.
	_, err = e.m.Open(ctx, key("other"))
	require.ErrorIs(t, err, session.ErrManagerDraining)
	isKind(t, err, fault.NotAvailable)
	_, err = l.Session().Start(ctx, ask("again"))
	require.ErrorIs(t, err, session.ErrManagerDraining)
	_, err = l.Session().Resume(ctx)
	require.ErrorIs(t, err, session.ErrManagerDraining)

	// 1.9.2: Drain waits for the turn and never interrupts it.
	done := make(chan error, 1)
	go func() { done <- e.m.Drain(ctx) }()
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, session.TurnRunning, tr.State())
	g.Open()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("Drain did not return once idle")
	}
	res := settle(t, tr)
	assert.Equal(t, agent.StatusCompleted, res.Status, "the turn was never interrupted")
	assert.Empty(t, eng.Runs()[0].Interrupts)
	require.NoError(t, e.m.Drain(ctx), "a repeated Drain returns nil once idle")

	// 1.9.4 at manager level: Close works after Drain; Drain after Close is refused.
	require.NoError(t, e.m.Close())
	require.ErrorIs(t, e.m.Drain(ctx), session.ErrManagerClosed)
}

// REF 2.8.6
func TestUpdateTunables(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{IdleTimeout: time.Hour, MaxSessions: 10}})
	base := e.m.Tunables()
	for _, tc := range []struct {
		name string
		mod  func(*session.Tunables)
	}{
		{"idle timeout", func(t *session.Tunables) { t.IdleTimeout = 0 }},
		{"max sessions", func(t *session.Tunables) { t.MaxSessions = -1 }},
		{"sink buffer", func(t *session.Tunables) { t.SinkBuffer = 0 }},
		{"delivery concurrency", func(t *session.Tunables) { t.DeliveryConcurrency = 0 }},
		{"speculative events", func(t *session.Tunables) { t.SpeculativeBufferEvents = 0 }},
		{"speculative bytes", func(t *session.Tunables) { t.SpeculativeBufferBytes = -5 }},
	} {
		tun := base
		tc.mod(&tun)
		err := e.m.UpdateTunables(tun)
		isKind(t, err, fault.Validation)
		assert.Equal(t, base, e.m.Tunables(), "%s: a refused update changes nothing", tc.name)
	}

	e.open(key("a"))
	e.open(key("b"))
	idle, err := e.m.Open(context.Background(), key("idle"))
	require.NoError(t, err)
	require.NoError(t, idle.Close())
	gen, armed, _ := session.IdleTimer(e.m, key("idle"))
	require.True(t, armed)
	same := base
	same.SinkBuffer = 7
	require.NoError(t, e.m.UpdateTunables(same))
	again, armed, _ := session.IdleTimer(e.m, key("idle"))
	assert.True(t, armed)
	assert.Equal(t, gen, again, "an unchanged idle timeout leaves armed timers running")

	tun := base
	tun.MaxSessions = 3
	tun.IdleTimeout = time.Millisecond
	require.NoError(t, e.m.UpdateTunables(tun))
	assert.Equal(t, tun, e.m.Tunables())
	eventually(t, func() bool { return e.m.Sessions() == 2 }, "the armed idle timer restarts with the new timeout")
	e.open(key("c"))
	_, err = e.m.Open(context.Background(), key("d"))
	isKind(t, err, fault.RateLimit)

	require.NoError(t, e.m.Close())
	require.ErrorIs(t, e.m.UpdateTunables(tun), session.ErrManagerClosed)
}

// REF 2.8.7
// REF 2.2.5
func TestSwapDepsEpochs(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	oldEng := agenttest.New(agenttest.WaitGate(g), agenttest.Reply("old"))
	e := newEnv(t, oldEng)
	t.Cleanup(g.Open)
	running := e.start("c", "hi")
	reached(t, g)

	newAgents := newAgents()
	newEng := agenttest.New(agenttest.Reply("new"))
	newAgents.put(botID, newEng)
	deps := session.Deps{Resolver: newAgents, HostFactory: e.factory(nil), Bus: e.bus, Epoch: 2}
	var retired sync.WaitGroup
	retired.Add(1)
	calls := 0
	var mu sync.Mutex
	require.NoError(t, e.m.SwapDeps(deps, func() {
		mu.Lock()
		calls++
		mu.Unlock()
		retired.Done()
	}))
	assert.Equal(t, uint64(2), e.m.Deps().Epoch)
	mu.Lock()
	assert.Zero(t, calls, "the running turn holds the old epoch")
	mu.Unlock()

	// A new Start interrupts the running turn and uses the new deps; the
	// running turn finishes on the old engine.
	g.Open()
	assert.Equal(t, "old", agenttest.ReplyText(settle(t, running).Output))
	next, err := running.Session().Start(context.Background(), ask("again"))
	require.NoError(t, err)
	assert.Equal(t, "new", agenttest.ReplyText(settle(t, next).Output))
	retired.Wait()
	mu.Lock()
	assert.Equal(t, 1, calls, "onRetired runs exactly once")
	mu.Unlock()
	assert.Len(t, oldEng.Runs(), 1)
	assert.Len(t, newEng.Runs(), 1)
}

// REF 2.8.7
func TestSwapDepsRetiresAtOnceWhenUnused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New())
	settle(t, e.start("c", "hi"))
	calls := 0
	require.NoError(t, e.m.SwapDeps(e.deps(nil, false), func() { calls++ }))
	assert.Equal(t, 1, calls, "no turn holds the old epoch: onRetired ran before SwapDeps returned")
	require.NoError(t, e.m.SwapDeps(e.deps(nil, false), nil), "a nil onRetired is allowed")

	for _, tc := range []struct {
		name string
		deps session.Deps
	}{
		{"no resolver", session.Deps{HostFactory: e.factory(nil), Bus: e.bus}},
		{"no host factory", session.Deps{Resolver: e.agents, Bus: e.bus}},
		{"resume without a store", session.Deps{Resolver: e.agents, HostFactory: e.factory(nil), Bus: e.bus, Resume: true}},
	} {
		isKind(t, e.m.SwapDeps(tc.deps, func() { t.Errorf("%s: onRetired ran", tc.name) }), fault.Validation)
	}
	require.NoError(t, e.m.Close())
	require.ErrorIs(t, e.m.SwapDeps(e.deps(nil, false), nil), session.ErrManagerClosed)
	assert.Equal(t, 1, calls)
}

// Two swaps while a turn holds the first epoch: the second epoch, unused,
// retires at once; the first when its turn ends. Each hook runs once.
// REF 2.8.7
func TestSwapDepsTwice(t *testing.T) {
	t.Parallel()
	e, g := gatedEnv(t)
	tr := e.start("c", "hi")
	reached(t, g)
	var mu sync.Mutex
	var order []string
	hook := func(name string) func() {
		return func() { mu.Lock(); order = append(order, name); mu.Unlock() }
	}
	require.NoError(t, e.m.SwapDeps(e.deps(nil, false), hook("first")))
	require.NoError(t, e.m.SwapDeps(e.deps(nil, false), hook("second")))
	mu.Lock()
	assert.Equal(t, []string{"second"}, order)
	mu.Unlock()
	g.Open()
	settle(t, tr)
	eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 2 }, "the first epoch retires")
	time.Sleep(10 * time.Millisecond)
	mu.Lock()
	assert.Equal(t, []string{"second", "first"}, order)
	mu.Unlock()
}

// REF 2.8.8
func TestClose(t *testing.T) {
	t.Parallel()
	var obs observerLog
	eng := agenttest.New(agenttest.WaitInterrupt())
	e := newEnvConfig(t, eng, session.Config{Tunables: session.Tunables{IdleTimeout: time.Hour}, Observers: []session.SessionObserver{obs.observer("")}})
	tr := e.start("busy", "hi")
	idle := e.open(key("idle"))
	eventually(t, func() bool { return len(eng.Runs()) == 1 }, "the engine runs")

	require.NoError(t, e.m.Close())
	res := settle(t, tr)
	assert.Equal(t, agent.StatusInterrupted, res.Status)
	assert.Equal(t, agent.CauseHostShutdown, eng.Runs()[0].Interrupts[0].Cause)
	assert.Equal(t, 0, e.m.Sessions())
	assert.Equal(t, 1, obs.count("closing busy"))
	assert.Equal(t, 1, obs.count("closing idle"))
	assert.Equal(t, 1, obs.count("closed busy"))
	assert.Equal(t, 1, obs.count("closed idle"))

	require.NoError(t, e.m.Close(), "Close is idempotent")
	assert.Equal(t, 1, obs.count("closing busy"))
	_, err := e.m.Open(context.Background(), key("new"))
	require.ErrorIs(t, err, session.ErrManagerClosed)
	_, err = idle.Session().Start(context.Background(), ask("late"))
	isKind(t, err, fault.NotAvailable)
	require.NoError(t, idle.Close())
	assert.Equal(t, 0, e.m.Sessions())
}

// A turn that ignores its interrupt is cancelled after the close timeout,
// and Close still returns.
// REF 2.8.8
func TestCloseCancelsTurnThatIgnoresInterrupt(t *testing.T) {
	t.Parallel()
	eng := agenttest.New(agenttest.Hang())
	e := newEnvConfig(t, eng, session.Config{CloseTimeout: 20 * time.Millisecond})
	tr := e.start("c", "hi")
	eventually(t, func() bool { return len(eng.Runs()) == 1 }, "the engine runs")
	closed := make(chan struct{})
	go func() {
		_ = e.m.Close()
		close(closed)
	}()
	within(t, closed, "Close")
	res := settle(t, tr)
	assert.Equal(t, agent.StatusCanceled, res.Status)
	assert.Equal(t, session.TurnCanceled, tr.State())
}

// REF 2.8.9
func TestObservers(t *testing.T) {
	t.Parallel()
	var obs observerLog
	var startedState session.TurnState
	var startedTurn *session.Turn
	peek := session.ObserverFuncs{Started: func(_ *session.Session, tr *session.Turn) {
		startedState, startedTurn = tr.State(), tr
	}}
	e := newEnvConfig(t, agenttest.New(), session.Config{Observers: []session.SessionObserver{obs.observer("a:"), obs.observer("b:"), peek}})
	tr := e.start("c", "hi")
	assert.Same(t, tr, startedTurn)
	assert.Equal(t, session.TurnRunning, startedState, "OnSessionStarted sees the running turn")
	settle(t, tr)
	eventually(t, func() bool { return obs.count("b:finished c") == 1 }, "OnTurnFinished")
	require.NoError(t, e.m.DeleteSession(context.Background(), key("c")))
	require.NoError(t, e.m.Close())
	assert.Equal(t, []string{
		"a:started c", "b:started c",
		"a:finished c", "b:finished c",
		"a:closing c", "b:closing c",
		"a:closed c", "b:closed c",
	}, obs.all())
}

// OnSessionClosing fires once per session, however many closes race.
// REF 2.8.9
func TestObserverClosingOnce(t *testing.T) {
	t.Parallel()
	var obs observerLog
	e := newEnvConfig(t, agenttest.New(), session.Config{Observers: []session.SessionObserver{obs.observer("")}})
	settle(t, e.start("c", "hi"))
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.m.DeleteSession(context.Background(), key("c")) })
	wg.Go(func() { _ = e.m.Close() })
	wg.Go(func() { _ = e.m.RemoveAgent(context.Background(), botID) })
	wg.Wait()
	assert.Equal(t, 1, obs.count("closing c"))
	assert.Equal(t, 1, obs.count("closed c"))
}

type nonDeleter struct{ agent.CheckpointStore }

// REF 2.8.10
func TestNewManagerValidation(t *testing.T) {
	t.Parallel()
	bus := event.NewMemoryBus()
	t.Cleanup(func() { _ = bus.Close() })
	res := newAgents()
	hf := func(context.Context, session.HostRequest) (agent.Host, error) { return agent.NoopHost{}, nil }
	ok := session.Deps{Resolver: res, HostFactory: hf, Bus: bus}
	mem := checkpoint.NewMemory()
	neg := func(mod func(*session.Tunables)) session.Config {
		var c session.Config
		mod(&c.Tunables)
		return c
	}
	for _, tc := range []struct {
		name string
		deps session.Deps
		cfg  session.Config
	}{
		{"no resolver", session.Deps{HostFactory: hf, Bus: bus}, session.Config{}},
		{"typed nil resolver", session.Deps{Resolver: (*agents)(nil), HostFactory: hf, Bus: bus}, session.Config{}},
		{"no host factory", session.Deps{Resolver: res, Bus: bus}, session.Config{}},
		{"no bus", session.Deps{Resolver: res, HostFactory: hf}, session.Config{}},
		{"idle timeout negative", ok, neg(func(t *session.Tunables) { t.IdleTimeout = -time.Second })},
		{"sink buffer negative", ok, neg(func(t *session.Tunables) { t.SinkBuffer = -1 })},
		{"delivery concurrency negative", ok, neg(func(t *session.Tunables) { t.DeliveryConcurrency = -1 })},
		{"max sessions negative", ok, neg(func(t *session.Tunables) { t.MaxSessions = -1 })},
		{"speculative events negative", ok, neg(func(t *session.Tunables) { t.SpeculativeBufferEvents = -1 })},
		{"speculative bytes negative", ok, neg(func(t *session.Tunables) { t.SpeculativeBufferBytes = -1 })},
		{"nil observer", ok, session.Config{Observers: []session.SessionObserver{session.ObserverFuncs{}, nil}}},
		{"typed nil observer", ok, session.Config{Observers: []session.SessionObserver{(*session.ObserverFuncs)(nil)}}},
		{"close timeout negative", ok, session.Config{CloseTimeout: -time.Second}},
		{"finalize budget negative", ok, session.Config{FinalizeBudget: -time.Second}},
		{"resume without a store", session.Deps{Resolver: res, HostFactory: hf, Bus: bus, Resume: true}, session.Config{}},
		{"resume with a typed nil store", session.Deps{Resolver: res, HostFactory: hf, Bus: bus,
			Checkpoints: (*checkpoint.Memory)(nil), Resume: true}, session.Config{}},
		{"resume with a store that cannot delete", session.Deps{Resolver: res, HostFactory: hf, Bus: bus,
			Checkpoints: nonDeleter{mem}, Resume: true}, session.Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := session.NewManagerWithConfig(tc.deps, tc.cfg)
			isKind(t, err, fault.Validation)
			assert.Nil(t, m)
		})
	}

	// Zero values are the defaults.
	m, err := session.NewManager(ok)
	require.NoError(t, err)
	assert.Equal(t, session.DefaultTunables(), m.Tunables())
	require.NoError(t, m.Close())
	m, err = session.NewManagerWithConfig(ok, session.Config{Tunables: session.Tunables{SinkBuffer: 3}})
	require.NoError(t, err)
	want := session.DefaultTunables()
	want.SinkBuffer = 3
	assert.Equal(t, want, m.Tunables(), "a zero tunable takes its default")
	require.NoError(t, m.Close())

	withStore := session.Deps{Resolver: res, HostFactory: hf, Bus: bus, Checkpoints: mem, Resume: true,
		CatalogProvider: func(context.Context, session.Key) (any, error) { return nil, nil }}
	m, err = session.NewManagerWithConfig(withStore, session.Config{
		Tunables: session.Tunables{IdleTimeout: time.Second, MaxSessions: 5, SinkBuffer: 3,
			DeliveryConcurrency: 2, SpeculativeBufferEvents: 7, SpeculativeBufferBytes: 9},
		Observers: []session.SessionObserver{session.ObserverFuncs{}}, Logger: slog.Default(),
		CloseTimeout: time.Second, FinalizeBudget: time.Second})
	require.NoError(t, err)
	assert.Equal(t, session.Tunables{IdleTimeout: time.Second, MaxSessions: 5, SinkBuffer: 3,
		DeliveryConcurrency: 2, SpeculativeBufferEvents: 7, SpeculativeBufferBytes: 9}, m.Tunables())
	assert.True(t, m.Deps().Resume)
	assert.Same(t, mem, m.Deps().Checkpoints)
	require.NoError(t, m.Close())
}
