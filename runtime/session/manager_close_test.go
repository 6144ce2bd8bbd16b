package session_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A turn started from an existing lease while RemoveAgent waits is never
// closed under it: RemoveAgent checks idleness and marks the sessions
// closing in one step, so it keeps waiting, and on ctx expiry the
// tombstone stays and the session and its turn are untouched.
// REF 2.8.4
func TestRemoveAgentTurnStartedWhileWaiting(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{})
	e := newEnvConfig(t, agenttest.New(stubborn(release, started)), session.Config{CloseTimeout: patience})
	l := e.open(key("c")) // an idle session with a lease
	var (
		once sync.Once
		tr   *session.Turn
		err  error
	)
	session.SetRemovePollHook(e.m, func() {
		once.Do(func() {
			tr, err = l.Session().Start(context.Background(), ask("hi"))
			if err == nil {
				<-started
			}
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, e.m.RemoveAgent(ctx, botID), context.DeadlineExceeded)
	require.NoError(t, err, "the lease holder's Start")
	assert.Equal(t, session.TurnRunning, tr.State(), "the turn was not interrupted")
	assert.Equal(t, 1, e.m.Sessions(), "the session is untouched")
	_, openErr := e.m.Open(context.Background(), key("other"))
	require.Error(t, openErr, "the tombstone stays")

	close(release)
	settle(t, tr)
	require.NoError(t, e.m.RemoveAgent(context.Background(), botID))
	assert.Equal(t, 0, e.m.Sessions())
}

// Close keeps each session's entry, closing, until the session's close
// returned, so the manager is not idle while a turn is still stopping.
// REF 2.8.1
// REF 2.8.8
func TestCloseNotIdleWhileTurnStops(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{})
	closing := make(chan struct{})
	var closingOnce sync.Once
	obs := session.ObserverFuncs{Closing: func(*session.Session) { closingOnce.Do(func() { close(closing) }) }}
	e := newEnvConfig(t, agenttest.New(stubborn(release, started)), session.Config{Observers: []session.SessionObserver{obs}, CloseTimeout: patience})
	tr := e.start("c", "hi")
	<-started
	closed := make(chan struct{})
	go func() {
		_ = e.m.Close()
		close(closed)
	}()
	within(t, closing, "OnSessionClosing")
	assert.False(t, e.m.Idle(), "a turn is still running")
	assert.Equal(t, 1, e.m.Sessions(), "the entry stays until the close returned")
	close(release)
	within(t, closed, "Close")
	settle(t, tr)
	assert.True(t, e.m.Idle())
	assert.Equal(t, 0, e.m.Sessions())
}

// A start that begins after the idle timer's lease and generation checks
// keeps the session: reclaim checks idleness and marks the session closing
// in one step.
// REF 2.1.7
func TestReclaimSkipsSessionStartingMeanwhile(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, agenttest.New(), session.Config{Tunables: session.Tunables{IdleTimeout: time.Hour}})
	l := e.open(key("c"))
	s := l.Session()
	require.NoError(t, l.Close())
	gen, armed, ok := session.IdleTimer(e.m, key("c"))
	require.True(t, ok)
	require.True(t, armed)
	var began error
	session.SetReclaimHook(e.m, func(hs *session.Session) {
		if hs == s {
			began = session.BeginStart(s)
		}
	})
	require.True(t, session.FireIdleTimer(e.m, key("c"), gen))
	require.NoError(t, began)
	session.EndStart(s)
	assert.Equal(t, 1, e.m.Sessions(), "a session with a start in flight is not reclaimed")
	settle(t, startOn(t, s, "hi"))
}

func startOn(t *testing.T, s *session.Session, text string) *session.Turn {
	t.Helper()
	tr, err := s.Start(context.Background(), ask(text))
	require.NoError(t, err, "the session still takes turns")
	return tr
}
