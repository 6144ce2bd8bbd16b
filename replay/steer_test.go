package replay_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 10.1.7, REF 10.2.9: steer messages that arrived but no node drained
// are counted in the turn's result (session.pending_steer); a replay queues
// as many before its run starts, so the result replays identically.
func TestReplayUndrainedSteer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	doc, err := deploy.ParseFile("testdata/replay/dice/deploy.yaml")
	require.NoError(t, err)
	rec, res, err := replay.Record(ctx, replay.TurnConfig{Document: doc, NewBuilder: builtin.NewBuilder,
		Agent: "dice", Answers: []string{"Ada"}, Steer: []string{"keep it short", "and kind"},
		Request: agent.Request{Message: message.NewTextMessage(message.RoleUser, "roll")}})
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status)
	var state map[string]any
	require.NoError(t, json.Unmarshal(rec.Result.State, &state))
	assert.EqualValues(t, 2, state[session.StatePendingSteer], "the dice graph drains no steer")

	again, err := replay.DecodeBytes(encoded(t, rec))
	require.NoError(t, err)
	rep, err := replay.Replay(ctx, again, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
	require.NoError(t, err)
	assert.True(t, rep.Identical, "%v", rep.Divergence)
}
