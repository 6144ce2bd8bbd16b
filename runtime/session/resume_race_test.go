package session_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Resume refused for a reason that needs no parked-run read leaves the
// active turn alone.
// REF 2.6.4
func TestResumeRefusedLeavesActiveTurn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   func(t *testing.T, eng *agenttest.Engine) *env
		start session.StartConfig
	}{
		{"no store, resume off", func(t *testing.T, eng *agenttest.Engine) *env { return newEnv(t, eng) }, session.StartConfig{}},
		{"ephemeral session", func(t *testing.T, eng *agenttest.Engine) *env {
			return newDurableEnv(t, resumable{Engine: eng})
		}, session.StartConfig{Ephemeral: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eng := agenttest.New(agenttest.WaitInterrupt())
			e := tc.env(t, eng)
			tr := e.startConfig("c", "hi", tc.start)
			eventually(t, func() bool { return len(eng.Runs()) == 1 }, "the engine runs")
			_, err := tr.Session().Resume(context.Background())
			isKind(t, err, fault.NotFound)
			assert.Equal(t, session.TurnRunning, tr.State(), "the active turn was not touched")
			assert.Empty(t, eng.Runs()[0].Interrupts)
			require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
			settle(t, tr)
		})
	}
}

// gatedStore blocks the first Load of a run checkpoint once armed, until
// release closes.
type gatedStore struct {
	agent.CheckpointStore
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) Load(ctx context.Context, id string) (*agent.Checkpoint, error) {
	g.mu.Lock()
	block := g.armed && strings.HasPrefix(id, "run-")
	g.armed = g.armed && !block
	g.mu.Unlock()
	if block {
		close(g.entered)
		<-g.release
	}
	return g.CheckpointStore.Load(ctx, id)
}

func (g *gatedStore) Delete(ctx context.Context, id string) error {
	return g.CheckpointStore.(agent.CheckpointDeleter).Delete(ctx, id)
}

func (g *gatedStore) List(ctx context.Context) ([]string, error) {
	return g.CheckpointStore.(agent.CheckpointLister).List(ctx)
}

// A DeleteSession that runs while a Resume reads the parked run waits for
// the resumed turn, and the deleted record is never written back.
// REF 2.7.7
func TestResumeRacingDeleteSession(t *testing.T) {
	t.Parallel()
	eng := agenttest.New(agenttest.Checkpoint(), agenttest.WaitInterrupt(), agenttest.Fail(nil))
	gs := &gatedStore{CheckpointStore: workspaceStore(t, t.TempDir()),
		entered: make(chan struct{}), release: make(chan struct{})}
	e := newEnvWith(t, gs, true, resumable{Engine: eng})
	s := parkRun(t, e, "c").Session()
	l := e.open(key("c"))
	defer l.Close()

	gs.mu.Lock()
	gs.armed = true
	gs.mu.Unlock()
	type resumed struct {
		tr  *session.Turn
		err error
	}
	resCh := make(chan resumed, 1)
	go func() {
		tr, err := s.Resume(context.Background())
		resCh <- resumed{tr, err}
	}()
	within(t, gs.entered, "Resume reads the parked run")
	delErr := make(chan error, 1)
	go func() { delErr <- e.m.DeleteSession(context.Background(), key("c")) }()
	eventually(t, func() bool {
		_, err := e.m.Open(context.Background(), key("c"))
		return err != nil && strings.Contains(err.Error(), "being deleted")
	}, "the delete runs")
	close(gs.release)

	r := <-resCh
	if r.err == nil {
		require.NoError(t, r.tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
		settle(t, r.tr)
	} else {
		require.ErrorIs(t, r.err, session.ErrSessionClosing)
	}
	select {
	case err := <-delErr:
		require.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("DeleteSession did not return")
	}
	assert.Empty(t, e.storeIDs(), "the deleted session's state stays deleted")
}
