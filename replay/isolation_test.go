package replay_test

import (
	"context"
	"os"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A turn recorded in one isolation replays identically in the other: the
// journal is the parent's, and a worker answers host calls through it.
func TestReplayAcrossIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inProc, err := deploy.ParseFile("testdata/replay/dice/deploy.yaml")
	require.NoError(t, err)
	process, err := deploy.ParseFile("testdata/replay/dice-process/deploy.yaml")
	require.NoError(t, err)

	// Recorded in process, replayed in a worker process.
	data, err := os.ReadFile("testdata/replay/dice.jsonl")
	require.NoError(t, err)
	rec, err := replay.DecodeBytes(data)
	require.NoError(t, err)
	rep, err := replay.Replay(ctx, rec, replay.Config{Document: process, NewBuilder: builtin.NewBuilder})
	require.NoError(t, err)
	assert.True(t, rep.Identical, "%v", rep.Divergence)

	// Recorded in a worker process, replayed in process.
	rec, res, err := replay.Record(ctx, replay.TurnConfig{Document: process, NewBuilder: builtin.NewBuilder, Agent: "dice",
		Request: agent.Request{Message: message.NewTextMessage(message.RoleUser, "roll")}, Answers: []string{"Ada"}})
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status)
	rep, err = replay.Replay(ctx, rec, replay.Config{Document: inProc, NewBuilder: builtin.NewBuilder})
	require.NoError(t, err)
	assert.True(t, rep.Identical, "%v", rep.Divergence)

	// A divergence in a worker is still found, named by node and call.
	data, err = os.ReadFile("testdata/replay/bad-missing-input.jsonl")
	require.NoError(t, err)
	bad, err := replay.DecodeBytes(data)
	require.NoError(t, err)
	rep, err = replay.Replay(ctx, bad, replay.Config{Document: process, NewBuilder: builtin.NewBuilder})
	require.NoError(t, err)
	require.False(t, rep.Identical)
	assert.Equal(t, "roll", rep.Divergence.Node)
	assert.Equal(t, 5, rep.Divergence.Call)
	assert.Equal(t, "now", rep.Divergence.Func)
	assert.Regexp(t, `^scripts/roll\.js:7:\d+$`, rep.Divergence.Where, "the script line crosses the process boundary")
}
