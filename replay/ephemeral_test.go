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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A turn of an ephemeral session (a stateless chat request, say) stores no
// checkpoint, yet its recording holds the board writes of every wave, and
// it replays identically; a changed board write is a divergence.
func TestReplayEphemeralTurnComparesBoards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	doc, err := deploy.ParseFile("testdata/replay/dice/deploy.yaml")
	require.NoError(t, err)
	rec, res, err := replay.Record(ctx, replay.TurnConfig{Document: doc, NewBuilder: builtin.NewBuilder,
		Agent: "dice", Answers: []string{"Ada"}, Ephemeral: true,
		Request: agent.Request{Message: message.NewTextMessage(message.RoleUser, "roll")}})
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status)
	require.NotEmpty(t, rec.Boards, "an ephemeral turn records its board writes")

	cfg := replay.Config{Document: doc, NewBuilder: builtin.NewBuilder}
	again, err := replay.DecodeBytes(encoded(t, rec))
	require.NoError(t, err)
	rep, err := replay.Replay(ctx, again, cfg)
	require.NoError(t, err)
	assert.True(t, rep.Identical, "%v", rep.Divergence)

	changed, err := replay.DecodeBytes(encoded(t, rec))
	require.NoError(t, err)
	changed.Boards[0].Set["rolled"] = json.RawMessage(`[7,7]`)
	rep, err = replay.Replay(ctx, changed, cfg)
	require.NoError(t, err)
	require.False(t, rep.Identical)
	assert.Equal(t, "board", rep.Divergence.What)
}
