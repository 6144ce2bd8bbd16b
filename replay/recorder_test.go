package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 10.1.4: a runtime-level recorder records every turn, keeps the newest MaxTurns,
// finishes a watched turn when it settles, and never writes credentials.
func TestRecorderRecordsEveryTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	doc, err := deploy.ParseFile("testdata/replay/chain10/deploy.yaml")
	require.NoError(t, err)
	rec, lease := recordedSession(t, doc, replay.RecorderConfig{MaxTurns: 2}, "chain")
	req := agent.Request{Message: message.NewTextMessage(message.RoleUser, "go"),
		Metadata: map[string]string{"Authorization": "Bearer sk-secret", "X-Api-Key": "sk-secret", "trace": "t1"}}
	var ids []string
	for range 3 {
		turn, err := lease.Session().Start(ctx, req)
		require.NoError(t, err)
		rec.Watch(turn, req)
		_, err = turn.Wait(ctx)
		require.NoError(t, err)
		ids = append(ids, turn.RunID())
	}
	assert.Equal(t, ids[1:], rec.RunIDs(), "the oldest turn is forgotten")
	_, ok := rec.Recording(ids[0])
	assert.False(t, ok)
	require.Eventually(t, func() bool {
		r, ok := rec.Recording(ids[2])
		return ok && r.Result != nil
	}, waitLimit, waitTick)
	r, _ := rec.Recording(ids[2])
	assert.Equal(t, agent.StatusCompleted, r.Result.Status)
	text := string(encoded(t, r))
	assert.NotContains(t, text, "sk-secret")
	assert.Equal(t, "[redacted]", r.Header.Request.Metadata["Authorization"])
	assert.Equal(t, "t1", r.Header.Request.Metadata["trace"])
	assert.Equal(t, ids[2], r.Header.RunID)
	assert.Len(t, r.Inputs, 20)
	assert.True(t, strings.HasPrefix(text, `{"kind":"header","format":1,`))

	err = rec.Finish("run-unknown", req, nil, nil)
	assert.True(t, fault.Is(err, fault.NotFound))
	_, err = rec.Decorate(nil)
	assert.True(t, fault.Is(err, fault.Validation))
}

// REF 10.1.8: a Recorder keeps at most MaxTurnBytes of one turn's events
// and board writes; past it the recording is marked truncated, survives
// encoding as such, and a replay refuses it with an error that says so.
func TestRecorderBoundsOneTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	doc, err := deploy.ParseFile("testdata/replay/chain10/deploy.yaml")
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		max       int64
		truncated bool
	}{
		{"default bound", 0, false},
		{"a bound the turn exceeds", 1024, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, lease := recordedSession(t, doc, replay.RecorderConfig{MaxTurnBytes: tc.max}, "chain")
			req := agent.Request{Message: message.NewTextMessage(message.RoleUser, "go")}
			turn, err := lease.Session().Start(ctx, req)
			require.NoError(t, err)
			res, err := turn.Wait(ctx)
			require.NoError(t, rec.Finish(turn.RunID(), req, res, err))
			r, ok := rec.Recording(turn.RunID())
			require.True(t, ok)
			assert.Equal(t, tc.truncated, r.Header.Truncated)
			again, err := replay.DecodeBytes(encoded(t, r))
			require.NoError(t, err)
			assert.Equal(t, tc.truncated, again.Header.Truncated)
			text := string(encoded(t, r))
			if !tc.truncated {
				assert.NotContains(t, text, `"truncated"`)
				return
			}
			assert.Less(t, len(text), 1024+len(encoded(t, &replay.Recording{Header: r.Header, Inputs: r.Inputs, Result: r.Result}))+64)
			_, err = replay.Replay(ctx, again, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
			require.Error(t, err)
			assert.True(t, fault.Is(err, fault.Validation), "%v", err)
			assert.Contains(t, err.Error(), "truncated")
		})
	}
}
