package session_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deleting starts DeleteSession(k) in the background and waits until the
// key is marked; the returned channel gets its result.
func deleting(t *testing.T, e *env, k session.Key) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- e.m.DeleteSession(context.Background(), k) }()
	eventually(t, func() bool {
		_, err := e.m.Open(context.Background(), k)
		return err != nil && fault.KindOf(err) == fault.NotAvailable
	}, "the delete marks the key")
	return done
}

func result(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(patience):
		t.Fatal("DeleteSession did not return")
		return nil
	}
}

// REF 2.7.1
func TestDeleteSessionChecks(t *testing.T) {
	t.Parallel()
	e, g := gatedEnv(t)
	isKind(t, e.m.DeleteSession(nil, key("c")), fault.Validation) //nolint:staticcheck // nil ctx on purpose
	isKind(t, e.m.DeleteSession(context.Background(), session.Key{AgentID: botID}), fault.Validation)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, e.m.DeleteSession(ctx, key("c")), context.Canceled)

	e.start("c", "hi")
	reached(t, g)
	done := deleting(t, e, key("c"))
	err := e.m.DeleteSession(context.Background(), key("c"))
	isKind(t, err, fault.NotAvailable)
	require.ErrorContains(t, err, "already running")
	g.Open()
	require.NoError(t, result(t, done))

	require.NoError(t, e.m.Close())
	err = e.m.DeleteSession(context.Background(), key("c"))
	require.ErrorIs(t, err, session.ErrManagerClosed)
}

// While a delete runs, opens for the key are refused; other keys are not
// affected.
// REF 2.7.2
func TestDeleteSessionRefusesOpens(t *testing.T) {
	t.Parallel()
	e, g := gatedEnvConfig(t, session.Config{Tunables: session.Tunables{IdleTimeout: time.Millisecond}})
	l, err := e.m.Open(context.Background(), key("c"))
	require.NoError(t, err)
	tr, err := l.Session().Start(context.Background(), ask("hi"))
	require.NoError(t, err)
	reached(t, g)
	done := deleting(t, e, key("c"))
	_, err = e.m.Open(context.Background(), key("c"))
	isKind(t, err, fault.NotAvailable)
	require.ErrorContains(t, err, "being deleted")
	e.open(key("other"))
	require.NoError(t, l.Close())
	_, armed, _ := session.IdleTimer(e.m, key("c"))
	assert.False(t, armed, "no idle timer runs for a key being deleted")
	g.Open()
	require.NoError(t, result(t, done))
	settle(t, tr)
	e.open(key("c"))
}

// A session already closing with an active turn: the mark is removed and
// a retryable NotAvailable returned.
// REF 2.7.3
func TestDeleteSessionClosingWithActiveTurn(t *testing.T) {
	t.Parallel()
	e, g := gatedEnv(t)
	tr := e.start("c", "hi")
	reached(t, g)
	require.True(t, session.MarkClosing(e.m, key("c")))
	err := e.m.DeleteSession(context.Background(), key("c"))
	isKind(t, err, fault.NotAvailable)
	require.ErrorContains(t, err, "retry")
	// No mark is left behind: a retry is judged afresh, not refused as
	// "already running".
	err = e.m.DeleteSession(context.Background(), key("c"))
	require.ErrorContains(t, err, "closing with an active turn")
	g.Open()
	settle(t, tr)
	// A closing session whose turn has stopped counts as idle (2.7.4).
	require.NoError(t, e.m.DeleteSession(context.Background(), key("c")))
	assert.Equal(t, 0, e.m.Sessions())
}

// On ctx expiry the delete rolls back: the mark is removed, the session is
// left as it was, nothing durable is removed.
// REF 2.7.4
func TestDeleteSessionRollback(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	eng := agenttest.NewScript(func(call int, _ agent.Run) []agenttest.Step {
		if call == 1 {
			return []agenttest.Step{agenttest.Reply("one"), agenttest.Checkpoint(), agenttest.WaitInterrupt()}
		}
		return []agenttest.Step{agenttest.WaitGate(g), agenttest.Reply("two")}
	})
	var obs observerLog
	e := newDurableEnvConfig(t, resumable{Engine: eng}, session.Config{Observers: []session.SessionObserver{obs.observer("")}})
	t.Cleanup(g.Open)
	parked := parkRun(t, e, "c")
	stored := e.storeIDs()
	require.Len(t, stored, 2, "a record and a parked checkpoint")

	l, err := e.m.Open(context.Background(), key("c"))
	require.NoError(t, err)
	tr, err := l.Session().Start(context.Background(), ask("again"))
	require.NoError(t, err)
	reached(t, g)
	require.NoError(t, l.Close())

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err = e.m.DeleteSession(ctx, key("c"))
	require.ErrorIs(t, err, context.DeadlineExceeded)

	assert.Equal(t, session.TurnRunning, tr.State(), "the running turn is untouched")
	assert.Equal(t, stored, e.storeIDs(), "nothing durable is removed")
	assert.Zero(t, obs.count("closing c"))
	again := e.open(key("c"))
	assert.Same(t, parked.Session(), again.Session(), "the mark is rolled back; the session is the same")
	require.NoError(t, again.Close())

	// The turn ends: the unleased session gets its idle timer again.
	g.Open()
	settle(t, tr)
	eventually(t, func() bool {
		_, armed, ok := session.IdleTimer(e.m, key("c"))
		return ok && armed
	}, "the idle timer is re-armed")

	// A retry succeeds.
	require.NoError(t, e.m.DeleteSession(context.Background(), key("c")))
	assert.Empty(t, e.storeIDs())
}

// The live session is closed and removed before the durable state goes.
// REF 2.7.5
func TestDeleteSessionClosesLiveSession(t *testing.T) {
	t.Parallel()
	var obs observerLog
	e := newEnvConfig(t, agenttest.New(), session.Config{Observers: []session.SessionObserver{obs.observer("")}})
	l := e.open(key("c"))
	settle(t, e.start("c", "hi"))
	require.NoError(t, e.m.DeleteSession(context.Background(), key("c")))
	assert.Equal(t, 0, e.m.Sessions())
	assert.Equal(t, []string{"started c", "finished c", "closing c", "closed c"}, obs.all())
	_, err := l.Session().Start(context.Background(), ask("late"))
	isKind(t, err, fault.NotAvailable)
	assert.NotSame(t, l.Session(), e.open(key("c")).Session())
}

// A delete that waits for a running turn lets it finish; no turn can start
// between the wait and the close.
// REF 2.7.5
func TestDeleteSessionWaitsForTurn(t *testing.T) {
	t.Parallel()
	e, g := gatedEnv(t)
	l := e.open(key("c"))
	tr := e.start("c", "hi")
	reached(t, g)
	done := deleting(t, e, key("c"))
	g.Open()
	require.NoError(t, result(t, done))
	assert.Equal(t, agent.StatusCompleted, settle(t, tr).Status, "the delete waited; it did not interrupt")
	_, err := l.Session().Start(context.Background(), ask("late"))
	isKind(t, err, fault.NotAvailable)
}

// REF 2.7.6
func TestDeleteSessionDurableState(t *testing.T) {
	t.Parallel()
	t.Run("record and parked checkpoint", func(t *testing.T) {
		t.Parallel()
		e := newDurableEnv(t, resumable{Engine: agenttest.New(agenttest.Checkpoint(), agenttest.WaitInterrupt())})
		keep := parkRun(t, e, "keep") // another session's state stays
		parkRun(t, e, "c")
		require.Len(t, e.storeIDs(), 4)
		require.NoError(t, e.m.DeleteSession(context.Background(), key("c")))
		assert.ElementsMatch(t, []string{session.SessionRecordID(key("keep")), keep.RunID()}, e.storeIDs())
	})
	t.Run("corrupt record", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ws, err := workspace.NewLocal(dir)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ws.Close() })
		st, err := checkpoint.NewStore(ws, "")
		require.NoError(t, err)
		e := newEnvWith(t, st, true, agenttest.New())
		id := session.SessionRecordID(key("c"))
		require.NoError(t, ws.Write(context.Background(), st.Path(id), []byte("{torn")))
		err = e.m.DeleteSession(context.Background(), key("c"))
		require.ErrorIs(t, err, checkpoint.ErrCorrupt, "the decode error is returned")
		assert.Empty(t, e.storeIDs(), "the corrupt record is deleted anyway")
		require.NoError(t, e.m.DeleteSession(context.Background(), key("c")))
	})
	t.Run("store error", func(t *testing.T) {
		t.Parallel()
		broken := fault.New(fault.NotAvailable, "disk", "gone")
		st := &hookStore{Memory: checkpoint.NewMemory(), deleteErr: broken}
		e := newEnvWith(t, st, true, agenttest.New())
		settle(t, e.start("c", "hi"))
		require.ErrorIs(t, e.m.DeleteSession(context.Background(), key("c")), broken)
	})
	t.Run("the current epoch's store", func(t *testing.T) {
		t.Parallel()
		e := newDurableEnv(t, agenttest.New())
		settle(t, e.start("c", "hi"))
		old := e.store
		next := checkpoint.NewMemory()
		require.NoError(t, next.Save(context.Background(), agent.Checkpoint{
			ExecID: session.SessionRecordID(key("c")), Board: agent.NewBoard(), Timestamp: time.Now(),
		}))
		require.NoError(t, e.m.SwapDeps(e.deps(next, true), nil))
		require.NoError(t, e.m.DeleteSession(context.Background(), key("c")))
		ids, err := next.List(context.Background())
		require.NoError(t, err)
		assert.Empty(t, ids, "deleted from the current store")
		assert.Len(t, e.storeIDs(), 1, "the retired store is not touched")
		_ = old
	})
	t.Run("a store that cannot delete", func(t *testing.T) {
		t.Parallel()
		st := nonDeleter{checkpoint.NewMemory()}
		e := newEnvWith(t, st, false, agenttest.New())
		require.NoError(t, e.m.DeleteSession(context.Background(), key("c")), "nothing stored: nothing to delete")
		require.NoError(t, st.Save(context.Background(), agent.Checkpoint{
			ExecID: session.SessionRecordID(key("c")), Board: agent.NewBoard(), Timestamp: time.Now(),
		}))
		isKind(t, e.m.DeleteSession(context.Background(), key("c")), fault.NotAvailable)
	})
}

// hookStore is a memory store whose Delete can fail, or wait once armed.
type hookStore struct {
	*checkpoint.Memory
	deleteErr error
	armed     atomic.Bool
	gate      chan struct{} // an armed Delete waits for it
	entered   chan struct{} // closed when an armed Delete starts
	once      sync.Once
}

func (s *hookStore) Delete(ctx context.Context, id string) error {
	if s.armed.Load() {
		s.once.Do(func() { close(s.entered) })
		<-s.gate
	}
	if s.deleteErr != nil {
		return s.deleteErr
	}
	return s.Memory.Delete(ctx, id)
}

// Opens are refused until the durable state is gone too; a later Open
// starts with empty history.
// REF 2.7.7
func TestDeleteSessionReopenStartsEmpty(t *testing.T) {
	t.Parallel()
	var seen []string
	eng := agenttest.New(agenttest.Func(func(_ context.Context, env *agenttest.Env) error {
		seen = texts(env.Board().Channel(agent.MainChannel))
		return nil
	}), agenttest.Reply("ok"))
	st := &hookStore{Memory: checkpoint.NewMemory(), gate: make(chan struct{}), entered: make(chan struct{})}
	e := newEnvWith(t, st, true, resumable{Engine: eng})
	settle(t, e.start("c", "first"))
	settle(t, e.start("c", "second"))
	assert.Equal(t, []string{"first", "ok", "second"}, seen, "history before the delete")

	st.armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- e.m.DeleteSession(context.Background(), key("c")) }()
	within(t, st.entered, "the durable delete")
	assert.Equal(t, 0, e.m.Sessions(), "the live session is gone")
	_, err := e.m.Open(context.Background(), key("c"))
	isKind(t, err, fault.NotAvailable)
	close(st.gate)
	require.NoError(t, result(t, done))
	st.armed.Store(false)

	settle(t, e.start("c", "fresh"))
	assert.Equal(t, []string{"fresh"}, seen, "a later Open starts with empty history")
}

// REF 2.7.8
func TestDeleteSessionIdempotent(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, agenttest.New())
	require.NoError(t, e.m.DeleteSession(context.Background(), key("never")))
	settle(t, e.start("c", "hi"))
	require.NoError(t, e.m.DeleteSession(context.Background(), key("c")))
	require.NoError(t, e.m.DeleteSession(context.Background(), key("c")))
	assert.Empty(t, e.storeIDs())
	plain := newEnv(t, agenttest.New())
	require.NoError(t, plain.m.DeleteSession(context.Background(), key("c")))
}

// REF 2.8.4
func TestRemoveAgent(t *testing.T) {
	t.Parallel()
	var obs observerLog
	e, g := gatedEnvConfig(t, session.Config{Tunables: session.Tunables{IdleTimeout: 20 * time.Millisecond}, Observers: []session.SessionObserver{obs.observer("")}})
	e.agents.put("other", agenttest.New())
	ctx := context.Background()
	isKind(t, e.m.RemoveAgent(nil, botID), fault.Validation) //nolint:staticcheck // nil ctx on purpose

	busy := e.start("busy", "hi")
	reached(t, g)
	idle, err := e.m.Open(ctx, key("idle"))
	require.NoError(t, err)
	require.NoError(t, idle.Close()) // its idle timer is armed
	other := e.open(session.Key{AgentID: "other", ContextID: "c"})

	// ctx expiry: the tombstone stays, the sessions are untouched.
	require.ErrorIs(t, e.m.RemoveAgent(expired(), botID), context.DeadlineExceeded)
	_, err = e.m.Open(ctx, key("new"))
	isKind(t, err, fault.NotFound)
	time.Sleep(60 * time.Millisecond) // longer than the idle timeout
	assert.Equal(t, 3, e.m.Sessions(), "the idle timer was stopped and nothing removed")
	assert.Equal(t, session.TurnRunning, busy.State(), "the running turn is untouched")
	assert.Zero(t, obs.count("closing busy")+obs.count("closing idle"))

	// Success: waits for the busy session, then closes and removes both.
	done := make(chan error, 1)
	go func() { done <- e.m.RemoveAgent(ctx, botID) }()
	g.Open()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("RemoveAgent did not return")
	}
	assert.Equal(t, agent.StatusCompleted, settle(t, busy).Status, "RemoveAgent waited; it did not interrupt")
	assert.Equal(t, 1, e.m.Sessions(), "only the other agent's session is left")
	assert.Equal(t, 1, obs.count("closed busy"))
	assert.Equal(t, 1, obs.count("closed idle"))
	_, err = busy.Session().Start(ctx, ask("again"))
	isKind(t, err, fault.NotAvailable)
	assert.Same(t, other.Session(), e.open(session.Key{AgentID: "other", ContextID: "c"}).Session())

	require.NoError(t, e.m.RemoveAgent(ctx, botID), "repeat calls are idempotent")
	assert.Equal(t, 1, obs.count("closed busy"))
}

// REF 2.8.5
func TestReopenAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New())
	ctx := context.Background()
	require.NoError(t, e.m.RemoveAgent(ctx, botID))
	_, err := e.m.Open(ctx, key("c"))
	isKind(t, err, fault.NotFound)
	e.m.ReopenAgent(botID)
	e.m.ReopenAgent(botID) // idempotent
	settle(t, e.start("c", "hi"))
}

// A tombstone stopped the idle timers; reopening the agent re-arms them.
// REF 2.8.5
func TestReopenAgentRearmsIdleTimers(t *testing.T) {
	t.Parallel()
	e, g := gatedEnvConfig(t, session.Config{Tunables: session.Tunables{IdleTimeout: time.Millisecond}})
	e.start("busy", "hi")
	reached(t, g)
	l, err := e.m.Open(context.Background(), key("idle"))
	require.NoError(t, err)
	require.ErrorIs(t, e.m.RemoveAgent(expired(), botID), context.DeadlineExceeded)
	require.NoError(t, l.Close())
	_, armed, _ := session.IdleTimer(e.m, key("idle"))
	require.False(t, armed)
	e.m.ReopenAgent(botID)
	eventually(t, func() bool {
		_, _, ok := session.IdleTimer(e.m, key("idle"))
		return !ok
	}, "the idle session is reclaimed after ReopenAgent")
}
