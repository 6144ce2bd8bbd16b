package replay_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 10.1.5, REF 10.2.7: an interrupt the engine takes at a wave boundary
// is an input of the run; its replay stops at the same boundary, interrupted,
// with the same board writes and events, and a replay with the interrupt
// taken out of the recording runs on and diverges.
func TestReplayInterruptedTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	doc, err := deploy.ParseFile("testdata/replay/dice/deploy.yaml")
	require.NoError(t, err)
	rec, res, err := replay.Record(ctx, replay.TurnConfig{Document: doc, NewBuilder: builtin.NewBuilder,
		Agent: "dice", Answers: []string{"Ada"}, InterruptAt: 1,
		Request: agent.Request{Message: message.NewTextMessage(message.RoleUser, "roll")}})
	require.NoError(t, err)
	require.Equal(t, agent.StatusInterrupted, res.Status)
	require.NotNil(t, rec.Result)
	assert.Equal(t, agent.StatusInterrupted, rec.Result.Status)
	last := rec.Inputs[len(rec.Inputs)-1]
	assert.Equal(t, graph.JournalFuncInterrupt, last.Func)
	assert.Equal(t, "roll", last.Node)
	assert.JSONEq(t, `["after_wave"]`, string(last.Args))

	again, err := replay.DecodeBytes(encoded(t, rec))
	require.NoError(t, err)
	cfg := replay.Config{Document: doc, NewBuilder: builtin.NewBuilder}
	rep, err := replay.Replay(ctx, again, cfg)
	require.NoError(t, err)
	if !assert.True(t, rep.Identical, "%v", rep.Divergence) {
		t.Logf("%s\n%s\n%s", rep.Divergence.Expected, rep.Divergence.Got, encoded(t, rec))
	}
	assert.Equal(t, agent.StatusInterrupted, rep.Got.Result.Status)

	cut, err := replay.DecodeBytes(encoded(t, rec))
	require.NoError(t, err)
	cut.Inputs = cut.Inputs[:len(cut.Inputs)-1]
	rep, err = replay.Replay(ctx, cut, cfg)
	require.NoError(t, err)
	require.False(t, rep.Identical)
	assert.NotEqual(t, agent.StatusInterrupted, rep.Got.Result.Status, "without the recorded interrupt the replay runs on")
}
