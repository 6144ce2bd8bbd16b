package replay_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 10.1.3: a delegation's result is an input: a script's
// host.delegate and a delegate node replay from the recording, and the
// replay holds exactly the recorded inputs.
func TestReplayDelegation(t *testing.T) {
	t.Parallel()
	doc, err := deploy.ParseFile("../testdata/delegation/deploy.yaml")
	require.NoError(t, err)
	ctx := context.Background()
	for _, id := range []string{"lead", "relay"} {
		rec, res, err := replay.Record(ctx, replay.TurnConfig{Document: doc, NewBuilder: builtin.NewBuilder, Agent: id,
			Request: agent.Request{Message: message.NewTextMessage(message.RoleUser, "otters")}})
		require.NoError(t, err, id)
		require.Equal(t, agent.StatusCompleted, res.Status, id)
		var funcs []string
		for _, in := range rec.Inputs {
			funcs = append(funcs, in.Func)
		}
		assert.Contains(t, funcs, "delegate", id)
		rep, err := replay.Replay(ctx, rec, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
		require.NoError(t, err, id)
		assert.True(t, rep.Identical, "%s: %v", id, rep.Divergence)
		assert.Equal(t, rec.Inputs, rep.Got.Inputs, id)
	}
}
