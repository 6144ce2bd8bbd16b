package session_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedEnv is an env whose engine parks every turn at one gate, opened
// when the test ends (before the manager closes).
func gatedEnv(t *testing.T) (*env, *agenttest.Gate) {
	t.Helper()
	return gatedEnvConfig(t, session.Config{})
}

// gatedEnvConfig is gatedEnv with a manager configured by cfg.
func gatedEnvConfig(t *testing.T, cfg session.Config) (*env, *agenttest.Gate) {
	t.Helper()
	g := agenttest.NewGate()
	e := newEnvConfig(t, agenttest.New(agenttest.WaitGate(g)), cfg)
	t.Cleanup(g.Open)
	return e, g
}

// expired returns a ctx that is already past its deadline.
func expired() context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	cancel()
	return ctx
}

// REF 2.1.1
func TestKeyValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		key  session.Key
		ok   bool
	}{
		{"both set", session.Key{AgentID: "a", ContextID: "c"}, true},
		{"empty agent", session.Key{ContextID: "c"}, false},
		{"empty context", session.Key{AgentID: "a"}, false},
		{"leading space", session.Key{AgentID: " a", ContextID: "c"}, false},
		{"trailing newline", session.Key{AgentID: "a", ContextID: "c\n"}, false},
		{"NUL in the agent id", session.Key{AgentID: "a\x00b", ContextID: "c"}, false},
		{"NUL in the context id", session.Key{AgentID: "a", ContextID: "b\x00c"}, false},
		{"control character inside", session.Key{AgentID: "a", ContextID: "b\x1bc"}, false},
		{"unicode and spaces inside", session.Key{AgentID: "a b", ContextID: "é/ü c"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.key.Validate()
			if tc.ok {
				require.NoError(t, err)
				return
			}
			isKind(t, err, fault.Validation)
		})
	}
	e := newEnv(t, agenttest.New())
	_, err := e.m.Open(context.Background(), session.Key{AgentID: botID, ContextID: " c"})
	isKind(t, err, fault.Validation)
}

// Two agents with the same context id do not share a session.
// REF 2.1.1
func TestKeyAgentsDoNotShare(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New())
	e.agents.put("other", agenttest.New())
	a := e.open(session.Key{AgentID: botID, ContextID: "c1"})
	b := e.open(session.Key{AgentID: "other", ContextID: "c1"})
	assert.NotSame(t, a.Session(), b.Session())
	assert.Equal(t, 2, e.m.Sessions())
}

// REF 2.1.2
func TestOpenAndGetOrCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New())
	a, err := e.m.Open(context.Background(), key("c"))
	require.NoError(t, err)
	b, err := e.m.GetOrCreate(context.Background(), key("c"))
	require.NoError(t, err)
	assert.NotSame(t, a, b, "each call returns its own lease")
	assert.Same(t, a.Session(), b.Session(), "leases share the session")
	require.NoError(t, a.Close())
	assert.Same(t, a.Session(), b.Session())
	require.NoError(t, b.Close())
}

// Each row puts the manager in a state where its own check and every
// later one would fail, so the row proves its check comes first.
// REF 2.1.3
func TestOpenCheckOrder(t *testing.T) {
	t.Parallel()
	type row struct {
		name  string
		setup func(t *testing.T) (context.Context, *env, session.Key)
		check func(t *testing.T, e *env, l *session.Lease, err error)
	}
	rows := []row{
		{"1 nil ctx before a closed manager", func(t *testing.T) (context.Context, *env, session.Key) {
			e := newEnv(t, agenttest.New())
			require.NoError(t, e.m.Close())
			return nil, e, key("c")
		}, func(t *testing.T, _ *env, _ *session.Lease, err error) { isKind(t, err, fault.Validation) }},
		{"1 cancelled ctx before a closed manager", func(t *testing.T) (context.Context, *env, session.Key) {
			e := newEnv(t, agenttest.New())
			require.NoError(t, e.m.Close())
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, e, key("c")
		}, func(t *testing.T, _ *env, _ *session.Lease, err error) { require.ErrorIs(t, err, context.Canceled) }},
		{"2 closed before draining", func(t *testing.T) (context.Context, *env, session.Key) {
			e := newEnv(t, agenttest.New())
			require.NoError(t, e.m.Drain(context.Background()))
			require.NoError(t, e.m.Close())
			return context.Background(), e, key("c")
		}, func(t *testing.T, _ *env, _ *session.Lease, err error) {
			require.ErrorIs(t, err, session.ErrManagerClosed)
			isKind(t, err, fault.NotAvailable)
		}},
		{"3 draining before deleting and tombstoned", func(t *testing.T) (context.Context, *env, session.Key) {
			e := deletingAndTombstoned(t)
			require.ErrorIs(t, e.m.Drain(expired()), context.DeadlineExceeded)
			return context.Background(), e, key("c")
		}, func(t *testing.T, _ *env, _ *session.Lease, err error) {
			require.ErrorIs(t, err, session.ErrManagerDraining)
		}},
		{"4 deleting before tombstoned", func(t *testing.T) (context.Context, *env, session.Key) {
			return context.Background(), deletingAndTombstoned(t), key("c")
		}, func(t *testing.T, _ *env, _ *session.Lease, err error) {
			isKind(t, err, fault.NotAvailable)
			require.NotErrorIs(t, err, session.ErrManagerDraining)
			require.ErrorContains(t, err, "being deleted")
		}},
		{"5 tombstoned before a closing entry", func(t *testing.T) (context.Context, *env, session.Key) {
			e, _ := gatedEnv(t)
			e.start("c", "hi")
			require.True(t, session.MarkClosing(e.m, key("c")))
			require.ErrorIs(t, e.m.RemoveAgent(expired(), botID), context.DeadlineExceeded)
			return context.Background(), e, key("c")
		}, func(t *testing.T, _ *env, _ *session.Lease, err error) {
			isKind(t, err, fault.NotFound)
			require.ErrorContains(t, err, "not deployed")
		}},
		{"6 closing entry before max sessions and the resolver", func(t *testing.T) (context.Context, *env, session.Key) {
			e, _ := gatedEnvConfig(t, session.Config{Tunables: session.Tunables{MaxSessions: 1}})
			e.start("c", "hi")
			require.True(t, session.MarkClosing(e.m, key("c")))
			e.agents.drop(botID)
			return context.Background(), e, key("c")
		}, func(t *testing.T, _ *env, _ *session.Lease, err error) {
			isKind(t, err, fault.NotAvailable)
			require.ErrorContains(t, err, "closing")
		}},
		{"7 existing entry before max sessions and the resolver", func(t *testing.T) (context.Context, *env, session.Key) {
			e := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{MaxSessions: 1}})
			e.open(key("c"))
			e.agents.drop(botID)
			return context.Background(), e, key("c")
		}, func(t *testing.T, e *env, l *session.Lease, err error) {
			require.NoError(t, err)
			require.NoError(t, l.Close())
			assert.Equal(t, 1, e.m.Sessions())
		}},
		{"8 max sessions before the resolver", func(t *testing.T) (context.Context, *env, session.Key) {
			e := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{MaxSessions: 1}})
			e.open(key("other"))
			return context.Background(), e, session.Key{AgentID: "ghost", ContextID: "c"}
		}, func(t *testing.T, _ *env, _ *session.Lease, err error) {
			isKind(t, err, fault.RateLimit)
			require.ErrorContains(t, err, "max sessions reached (1)")
		}},
		{"9 the resolver does not know the agent", func(t *testing.T) (context.Context, *env, session.Key) {
			return context.Background(), newEnv(t, agenttest.New()), session.Key{AgentID: "ghost", ContextID: "c"}
		}, func(t *testing.T, _ *env, _ *session.Lease, err error) { isKind(t, err, fault.NotFound) }},
		{"10 create the session", func(t *testing.T) (context.Context, *env, session.Key) {
			return context.Background(), newEnv(t, agenttest.New()), key("c")
		}, func(t *testing.T, e *env, l *session.Lease, err error) {
			require.NoError(t, err)
			assert.Equal(t, key("c"), l.Session().Key())
			assert.Equal(t, 1, e.m.Sessions())
			require.NoError(t, l.Close())
		}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			ctx, e, k := r.setup(t)
			l, err := e.m.Open(ctx, k) //nolint:staticcheck // a nil ctx is the point of row 1
			r.check(t, e, l, err)
		})
	}
}

// deletingAndTombstoned returns an env where key("c") is being deleted
// (its turn is parked at a gate, so the delete waits) and the agent is
// tombstoned.
func deletingAndTombstoned(t *testing.T) *env {
	t.Helper()
	e, _ := gatedEnv(t)
	e.start("c", "hi")
	go func() { _ = e.m.DeleteSession(context.Background(), key("c")) }()
	eventually(t, func() bool {
		_, err := e.m.Open(context.Background(), key("c"))
		return err != nil
	}, "the delete marks the key")
	require.ErrorIs(t, e.m.RemoveAgent(expired(), botID), context.DeadlineExceeded)
	return e
}

// Sessions capture the tunables current when they are created: a session
// opened with a sink buffer of 1 keeps it after UpdateTunables raised it.
// REF 2.1.3
func TestOpenCapturesTunables(t *testing.T) {
	t.Parallel()
	const deltas = 20
	g := agenttest.NewGate()
	steps := make([]agenttest.Step, 0, deltas+1)
	for range deltas {
		steps = append(steps, agenttest.Emit("x"))
	}
	e := newEnvConfig(t, agenttest.New(append(steps, agenttest.WaitGate(g))...), session.Config{Tunables: session.Tunables{SinkBuffer: 1}})
	t.Cleanup(g.Open)
	old := e.open(key("old")).Session()
	tun := e.m.Tunables()
	tun.SinkBuffer = 4096
	require.NoError(t, e.m.UpdateTunables(tun))
	fresh := e.open(key("new")).Session()

	start := func(s *session.Session) (*session.Turn, chan struct{}, chan error) {
		release := make(chan struct{})
		detached := make(chan error, 1)
		slow := agent.StreamSinkFunc(func(context.Context, event.Envelope, event.StreamDeltaPayload) error {
			<-release
			return nil
		})
		tr, err := s.Start(context.Background(), ask("go"),
			session.SinkSpec{ID: "slow", Sink: slow, OnDetach: func(err error) { detached <- err }})
		require.NoError(t, err)
		return tr, release, detached
	}

	tr, release, detached := start(old)
	select { // the sink is stuck on its first delta, so its queue of 1 overflows
	case err := <-detached:
		require.ErrorIs(t, err, session.ErrSinkQueueFull, "the old session keeps a sink buffer of 1")
	case <-time.After(patience):
		t.Fatal("the sink of the old session was never detached")
	}
	close(release)
	g.Open()
	settle(t, tr)

	tr, release, detached = start(fresh)
	close(release)
	settle(t, tr)
	require.NoError(t, <-detached, "the new session has a sink buffer of 4096")
}

// max_sessions counts live entries, leased or idle-retained, not leases.
// REF 2.1.4
func TestMaxSessionsCountsEntries(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{MaxSessions: 2}})
	ctx := context.Background()
	a1 := e.open(key("a"))
	e.open(key("a"))
	e.open(key("a")) // three leases, one entry
	e.open(key("b"))
	_, err := e.m.Open(ctx, key("c"))
	isKind(t, err, fault.RateLimit)

	require.NoError(t, a1.Close())
	_, err = e.m.Open(ctx, key("c"))
	isKind(t, err, fault.RateLimit)

	// An idle entry with no lease still counts, until a new session needs
	// its place (REF 2.1.8).
	e2 := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{MaxSessions: 1}})
	l, err := e2.m.Open(ctx, key("a"))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	assert.Equal(t, 1, e2.m.Sessions())
	e2.open(key("b"))
	assert.Equal(t, 1, e2.m.Sessions())
	_, err = e2.m.Open(ctx, key("c"))
	isKind(t, err, fault.RateLimit)
}

// REF 2.1.5
func TestLeaseCloseIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{IdleTimeout: 5 * time.Millisecond}})
	ctx := context.Background()
	held, err := e.m.Open(ctx, key("c"))
	require.NoError(t, err)
	extra, err := e.m.Open(ctx, key("c"))
	require.NoError(t, err)
	s := held.Session()

	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() { assert.NoError(t, extra.Close()) })
	}
	wg.Wait()
	require.NoError(t, extra.Close())
	assert.Same(t, s, extra.Session(), "Session still answers after Close")

	// Had the extra lease been counted down more than once, the held lease
	// would no longer count and the idle timer would reclaim the session.
	time.Sleep(50 * time.Millisecond)
	l, err := e.m.Open(ctx, key("c"))
	require.NoError(t, err)
	assert.Same(t, s, l.Session(), "the held lease keeps the session")
	require.NoError(t, l.Close())

	require.NoError(t, held.Close())
	eventually(t, func() bool { return e.m.Sessions() == 0 }, "the last lease close arms the idle timer")
}

// Closing the last lease of a tombstoned agent's session arms no timer.
// REF 2.1.5
func TestLeaseCloseTombstonedArmsNoTimer(t *testing.T) {
	t.Parallel()
	e, g := gatedEnvConfig(t, session.Config{Tunables: session.Tunables{IdleTimeout: 5 * time.Millisecond}})
	e.start("busy", "hi")
	l, err := e.m.Open(context.Background(), key("idle"))
	require.NoError(t, err)
	require.ErrorIs(t, e.m.RemoveAgent(expired(), botID), context.DeadlineExceeded)
	require.NoError(t, l.Close())
	_, armed, ok := session.IdleTimer(e.m, key("idle"))
	require.True(t, ok)
	assert.False(t, armed)
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, 2, e.m.Sessions(), "nothing reclaimed")
	g.Open()
}

// A session with an active turn, a pending prompt or an attached sink is
// not idle: closing its last lease arms no timer, and the timer is armed
// once the session becomes idle.
// REF 2.1.6
func TestIdleMeansNoTurnPromptOrSink(t *testing.T) {
	t.Parallel()
	heldThenReclaimed := func(t *testing.T, e *env, l *session.Lease, release func()) {
		t.Helper()
		require.NoError(t, l.Close())
		_, armed, ok := session.IdleTimer(e.m, l.Session().Key())
		require.True(t, ok)
		assert.False(t, armed, "a busy session arms no idle timer")
		time.Sleep(30 * time.Millisecond)
		assert.Equal(t, 1, e.m.Sessions(), "a busy session is not reclaimed")
		assert.False(t, e.m.Idle())
		release()
		eventually(t, func() bool { return e.m.Sessions() == 0 }, "the idle timer armed when the session became idle")
	}
	t.Run("active turn", func(t *testing.T) {
		t.Parallel()
		e, g := gatedEnvConfig(t, session.Config{Tunables: session.Tunables{IdleTimeout: time.Millisecond}})
		l, err := e.m.Open(context.Background(), key("c"))
		require.NoError(t, err)
		_, err = l.Session().Start(context.Background(), ask("hi"))
		require.NoError(t, err)
		reached(t, g)
		heldThenReclaimed(t, e, l, g.Open)
	})
	t.Run("pending prompt", func(t *testing.T) {
		t.Parallel()
		e := newEnvConfig(t, agenttest.New(agenttest.AskUser("name?")), session.Config{Tunables: session.Tunables{IdleTimeout: time.Millisecond}})
		prompts := recordBus(t, e.bus, session.PatternPromptRequested())
		l, err := e.m.Open(context.Background(), key("c"))
		require.NoError(t, err)
		tr, err := l.Session().Start(context.Background(), ask("hi"))
		require.NoError(t, err)
		p := decode[session.PromptRequested](t, prompts.await(t, 1, nil)[0])
		heldThenReclaimed(t, e, l, func() {
			require.NoError(t, tr.Reply(context.Background(), p.PromptID, agent.UserReply{Parts: userMsg("ann").Parts}))
		})
	})
	t.Run("attached sink", func(t *testing.T) {
		t.Parallel()
		e := newEnvConfig(t, agenttest.New(agenttest.Say("hello")), session.Config{Tunables: session.Tunables{IdleTimeout: time.Millisecond}})
		l, err := e.m.Open(context.Background(), key("c"))
		require.NoError(t, err)
		release := make(chan struct{})
		entered := make(chan struct{}, 1)
		slow := agent.StreamSinkFunc(func(context.Context, event.Envelope, event.StreamDeltaPayload) error {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
			return nil
		})
		_, err = l.Session().Start(context.Background(), ask("hi"), session.SinkSpec{ID: "slow", Sink: slow})
		require.NoError(t, err)
		within(t, entered, "the first delivery")
		heldThenReclaimed(t, e, l, func() { close(release) })
	})
}

// REF 2.1.7
func TestIdleReclaim(t *testing.T) {
	t.Parallel()
	t.Run("reclaimed after the timeout, then opened fresh", func(t *testing.T) {
		t.Parallel()
		var obs observerLog
		e := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{IdleTimeout: 5 * time.Millisecond}, Observers: []session.SessionObserver{obs.observer("")}})
		l, err := e.m.Open(context.Background(), key("c"))
		require.NoError(t, err)
		first := l.Session()
		require.NoError(t, l.Close())
		eventually(t, func() bool { return obs.count("closed c") == 1 }, "the session is reclaimed")
		assert.Equal(t, []string{"closing c", "closed c"}, obs.all())
		assert.Equal(t, 0, e.m.Sessions())
		assert.NotSame(t, first, e.open(key("c")).Session(), "a later Open creates a fresh session")
	})
	t.Run("a held lease prevents it", func(t *testing.T) {
		t.Parallel()
		e := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{IdleTimeout: time.Millisecond}})
		l := e.open(key("c"))
		time.Sleep(30 * time.Millisecond)
		assert.Same(t, l.Session(), e.open(key("c")).Session())
		gen, armed, _ := session.IdleTimer(e.m, key("c"))
		assert.False(t, armed)
		require.True(t, session.FireIdleTimer(e.m, key("c"), gen))
		assert.Equal(t, 1, e.m.Sessions(), "a leased session is never reclaimed")
	})
	t.Run("a re-open before expiry cancels the reclaim", func(t *testing.T) {
		t.Parallel()
		e := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{IdleTimeout: time.Hour}})
		l, err := e.m.Open(context.Background(), key("c"))
		require.NoError(t, err)
		s := l.Session()
		require.NoError(t, l.Close())
		stale, armed, _ := session.IdleTimer(e.m, key("c"))
		require.True(t, armed)

		l, err = e.m.Open(context.Background(), key("c"))
		require.NoError(t, err)
		_, armed, _ = session.IdleTimer(e.m, key("c"))
		assert.False(t, armed, "the re-open cancels the timer")
		require.NoError(t, l.Close())
		current, armed, _ := session.IdleTimer(e.m, key("c"))
		require.True(t, armed)
		require.NotEqual(t, stale, current)

		// The stale timer fires late: idle, unleased, but the generation
		// no longer matches.
		session.FireIdleTimer(e.m, key("c"), stale)
		assert.Equal(t, 1, e.m.Sessions())
		session.FireIdleTimer(e.m, key("c"), current)
		assert.Equal(t, 0, e.m.Sessions())
		assert.NotSame(t, s, e.open(key("c")).Session())
	})
	t.Run("a busy session is not reclaimed", func(t *testing.T) {
		t.Parallel()
		e, g := gatedEnvConfig(t, session.Config{Tunables: session.Tunables{IdleTimeout: time.Hour}})
		l, err := e.m.Open(context.Background(), key("c"))
		require.NoError(t, err)
		require.NoError(t, l.Close())
		_, err = l.Session().Start(context.Background(), ask("hi"))
		require.NoError(t, err)
		reached(t, g)
		gen, _, _ := session.IdleTimer(e.m, key("c"))
		session.FireIdleTimer(e.m, key("c"), gen)
		assert.Equal(t, 1, e.m.Sessions())
	})
}
