package session_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/session"
)

// live reports whether k has a live session entry.
func live(m *session.Manager, k session.Key) bool {
	_, _, ok := session.IdleTimer(m, k)
	return ok
}

// openIdle opens k and closes the lease at once: an idle session kept
// for its idle timeout.
func openIdle(t *testing.T, m *session.Manager, k session.Key) {
	t.Helper()
	l, err := m.Open(context.Background(), k)
	require.NoError(t, err)
	require.NoError(t, l.Close())
}

// REF 2.1.8
// A full manager makes room by evicting the session idle the longest;
// the others stay, and a session reopened in between is no longer the
// oldest.
func TestFullManagerEvictsOldestIdle(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{MaxSessions: 3}})
	for _, c := range []string{"a", "b", "c"} {
		openIdle(t, e.m, key(c))
	}
	openIdle(t, e.m, key("a")) // a is now idle since after c
	openIdle(t, e.m, key("d"))
	assert.False(t, live(e.m, key("b")), "b, idle the longest, was evicted")
	for _, c := range []string{"a", "c", "d"} {
		assert.True(t, live(e.m, key(c)), "%s stays", c)
	}
	openIdle(t, e.m, key("e"))
	assert.False(t, live(e.m, key("c")), "then c")
	assert.Equal(t, 3, e.m.Sessions())
}

// REF 2.1.8
// A session with a lease or an active turn is never evicted: with no
// idle session the open is refused, and once the turn ends its session
// makes room.
func TestFullManagerNeverEvictsLeasedOrRunning(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	t.Cleanup(g.Open)
	e := newEnvConfig(t, agenttest.New(agenttest.WaitGate(g), agenttest.Reply("ok")),
		session.Config{Tunables: session.Tunables{MaxSessions: 2}})
	held := e.open(key("held"))
	l, err := e.m.Open(context.Background(), key("running"))
	require.NoError(t, err)
	tr, err := l.Session().Start(context.Background(), ask("hi"))
	require.NoError(t, err)
	require.NoError(t, l.Close()) // no lease, but a turn
	reached(t, g)

	_, err = e.m.Open(context.Background(), key("new"))
	isKind(t, err, fault.RateLimit)
	require.ErrorContains(t, err, "max sessions reached (2)")
	assert.True(t, live(e.m, key("held")))
	assert.True(t, live(e.m, key("running")))
	select {
	case <-tr.Done():
		t.Fatal("the running turn was stopped")
	default:
	}

	g.Open()
	res := settle(t, tr)
	assert.Equal(t, agent.StatusCompleted, res.Status)
	eventually(t, func() bool {
		_, armed, _ := session.IdleTimer(e.m, key("running"))
		return armed
	}, "the finished session is idle")
	openIdle(t, e.m, key("new"))
	assert.False(t, live(e.m, key("running")), "the idle one made room")
	assert.True(t, live(e.m, key("held")), "the leased one stays")
	_, err = held.Session().Start(context.Background(), ask("still there"))
	require.NoError(t, err, "the leased session still runs turns")
}

// REF 2.1.8
// Eviction closes a durable session as the idle reclaim does: its
// history stays in the store and a later open of its key continues it.
func TestEvictedDurableSessionKeepsHistory(t *testing.T) {
	t.Parallel()
	eng := agenttest.New(agenttest.Reply("hello"))
	e := newDurableEnvConfig(t, resumable{Engine: eng}, session.Config{Tunables: session.Tunables{MaxSessions: 1}})
	l, err := e.m.Open(context.Background(), key("c"))
	require.NoError(t, err)
	settle(t, mustStart(t, l.Session(), "hi"))
	require.NoError(t, l.Close())
	eventually(t, func() bool {
		cp, err := e.store.Load(context.Background(), session.SessionRecordID(key("c")))
		return err == nil && cp.Board != nil && len(cp.Board.Channel(agent.MainChannel)) == 2
	}, "the history is stored")

	openIdle(t, e.m, key("other"))
	require.False(t, live(e.m, key("c")), "c was evicted")
	l, err = e.m.Open(context.Background(), key("c"))
	require.NoError(t, err)
	defer l.Close()
	settle(t, mustStart(t, l.Session(), "again"))
	runs := eng.Runs()
	require.Len(t, runs, 2)
	assert.Equal(t, []string{"hi", "hello", "again", "hello"}, texts(runs[1].Board.Channel(agent.MainChannel)),
		"the second turn starts from the stored history")
}

// REF 2.1.8
// A tenant at its sessions quota makes room among its own idle sessions,
// never another tenant's; with none idle it is refused.
func TestQuotaSessionsEvictsOwnIdle(t *testing.T) {
	t.Parallel()
	qe := newQuotaEnv(t, session.Quotas{Sessions: 2}, agenttest.New())
	openIdle(t, qe.m, session.Key{AgentID: "b1", ContextID: "x"})
	openIdle(t, qe.m, session.Key{AgentID: "a1", ContextID: "c1"})
	openIdle(t, qe.m, session.Key{AgentID: "a1", ContextID: "c2"})
	_, err := qe.lease(t, "a1", "c3")
	require.NoError(t, err)
	assert.False(t, live(qe.m, session.Key{AgentID: "a1", ContextID: "c1"}), "acme's oldest idle session made room")
	assert.True(t, live(qe.m, session.Key{AgentID: "b1", ContextID: "x"}), "bravo's is not acme's to evict")
	_, err = qe.lease(t, "a1", "c4")
	require.NoError(t, err, "c2 makes room")
	_, err = qe.lease(t, "a1", "c5")
	requireQuota(t, err, fault.BudgetExceeded, "acme", "sessions")
}

// REF 2.1.8
// Opens, closes and turns racing on a full manager: no open fails but
// for max sessions, the manager never holds more than max_sessions, a
// session is never evicted while a lease on it is held, and a turn that
// starts on a session kept past its lease is refused or completes.
func TestEvictionHammer(t *testing.T) {
	t.Parallel()
	const maxSessions, workers, rounds = 8, 8, 60
	e := newEnvConfig(t, agenttest.New(agenttest.Reply("ok")), session.Config{Tunables: session.Tunables{MaxSessions: maxSessions}})
	var wg sync.WaitGroup
	var opened atomic.Int64
	errs := make(chan error, 2*workers*rounds)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				k := key(fmt.Sprintf("w%d-%d", w, i%12))
				l, err := e.m.Open(context.Background(), k)
				if err != nil {
					if !errorsIsRateLimit(err) {
						errs <- err
					}
					continue
				}
				opened.Add(1)
				if i%3 == 0 {
					if tr, err := l.Session().Start(context.Background(), ask("hi")); err == nil {
						_, _ = tr.Wait(context.Background())
					}
				}
				if l.Session().Ephemeral() || !live(e.m, k) {
					errs <- fmt.Errorf("%s was evicted under its lease", k)
				}
				if n := e.m.Sessions(); n > maxSessions {
					errs <- fmt.Errorf("%d sessions, more than %d", n, maxSessions)
				}
				kept := l.Session()
				require.NoError(t, l.Close())
				if i%4 == 1 {
					// A turn started on a session kept past its lease
					// races its eviction: it is either refused or runs
					// to its end, never stopped by the eviction.
					tr, err := kept.Start(context.Background(), ask("late"))
					if err != nil {
						if !errors.Is(err, session.ErrSessionClosing) {
							errs <- err
						}
						continue
					}
					if res, err := tr.Wait(context.Background()); err != nil || res.Status != agent.StatusCompleted {
						errs <- fmt.Errorf("a turn on %s ended %v, %v", k, res, err)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.LessOrEqual(t, e.m.Sessions(), maxSessions)
	// 96 keys through 8 places: most opens made room by evicting.
	assert.Greater(t, opened.Load(), int64(workers*rounds/2), "opens succeeded")
}

func errorsIsRateLimit(err error) bool { return fault.KindOr(err, fault.Internal) == fault.RateLimit }

func mustStart(t *testing.T, s *session.Session, text string) *session.Turn {
	t.Helper()
	tr, err := s.Start(context.Background(), ask(text))
	require.NoError(t, err)
	return tr
}
