package session_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 12.6.3: a fresh run is marked in flight in the session's record
// before it executes, so when its process dies mid-turn another manager
// on the same store (another process, another node) finds it parked at
// its last checkpoint, resumes it under its run id and commits it; the
// steps before that checkpoint do not run again.
func TestRunInFlightResumesElsewhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	checkpoint := agenttest.Func(func(ctx context.Context, env *agenttest.Env) error { return env.Checkpoint(ctx, 2) })
	stuck := agenttest.New(agenttest.Reply("before"), checkpoint, agenttest.WaitInterrupt(), agenttest.Reply("after"))
	a := newEnvWith(t, workspaceStore(t, dir), true, resumable{Engine: stuck})
	la := a.open(key("c"))
	dying, err := la.Session().Start(context.Background(), ask("go"))
	require.NoError(t, err)
	eventually(t, func() bool { return len(stuck.Runs()) == 1 && len(stuck.Runs()[0].Steps) == 3 }, "the run waits after its checkpoint")

	runID, ok, err := la.Session().Resumable(context.Background())
	require.NoError(t, err)
	require.True(t, ok, "a running fresh run is resumable")
	assert.Equal(t, dying.RunID(), runID)

	// The first manager is never heard of again (its process died); a
	// second one opens the same store.
	var replayed []string
	healthy := agenttest.New(
		agenttest.Func(func(context.Context, *agenttest.Env) error { replayed = append(replayed, "before"); return nil }),
		agenttest.Func(func(context.Context, *agenttest.Env) error { replayed = append(replayed, "checkpoint"); return nil }),
		agenttest.Func(func(context.Context, *agenttest.Env) error { return nil }),
		agenttest.Reply("after"))
	b := newEnvWith(t, workspaceStore(t, dir), true, resumable{Engine: healthy})
	lb := b.open(key("c"))
	resumed, err := lb.Session().Resume(context.Background())
	require.NoError(t, err)
	assert.Equal(t, dying.RunID(), resumed.RunID(), "the original run id")
	res := settle(t, resumed)
	require.Equal(t, agent.StatusCompleted, res.Status)
	require.True(t, res.Committed)
	assert.Empty(t, replayed, "the steps before the checkpoint do not run again")
	assert.Equal(t, []string{"go", "before", "after"}, texts(res.LastBoard.Channel(agent.MainChannel)))
	_, ok, err = lb.Session().Resumable(context.Background())
	require.NoError(t, err)
	assert.False(t, ok, "committed: nothing left to resume")
}
