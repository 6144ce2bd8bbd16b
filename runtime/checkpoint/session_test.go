package checkpoint_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One session keeps three things in one store: the session record (its
// board is the committed history, its payload the resumable request and
// run id) and the parked run's checkpoint. A committed run deletes its
// checkpoint; deleting the session removes all of them. This walks the
// store through that life with the keys the runtime uses.
// REF 7.3
func TestSessionRecordsLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stores := map[string]interface {
		agent.CheckpointStore
		agent.CheckpointLister
		agent.CheckpointDeleter
	}{
		"workspace": newStore(t, newWorkspace(t), ""),
		"memory":    checkpoint.NewMemory(),
	}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sessionID := checkpoint.SessionKey("assistant", "c1")
			committed := checkpoint.RunKey()
			history := agent.NewBoard()
			history.Append("main", message.NewTextMessage(message.RoleUser, "hi"), message.NewTextMessage(message.RoleAssistant, "hello"))

			// A committed run deleted its checkpoint; the session's board is
			// the history.
			require.NoError(t, s.Save(ctx, checkpointtest.NewCheckpoint(committed, 1)))
			require.NoError(t, s.Delete(ctx, committed))
			require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: sessionID, Board: history,
				Attributes: map[string]string{"runtime.session.kind": "state"}}))

			// An interrupted run is parked: its checkpoint stays, the
			// session record names it and keeps the request.
			parked := checkpoint.RunKey()
			require.NoError(t, s.Save(ctx, checkpointtest.NewCheckpoint(parked, 2)))
			payload, err := json.Marshal(map[string]any{"resumable_run_id": parked, "request": map[string]any{"text": "go on"}})
			require.NoError(t, err)
			require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: sessionID, Board: history, Payload: payload,
				Attributes: map[string]string{"runtime.session.kind": "state"}}))

			ids, err := s.List(ctx)
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{parked, sessionID}, ids)
			rec, err := s.Load(ctx, sessionID)
			require.NoError(t, err)
			assert.JSONEq(t, string(payload), string(rec.Payload))
			assert.Len(t, rec.Board.Channel("main"), 2, "the history is the committed board")
			var state struct {
				RunID string `json:"resumable_run_id"`
			}
			require.NoError(t, json.Unmarshal(rec.Payload, &state))
			run, err := s.Load(ctx, state.RunID)
			require.NoError(t, err)
			require.NotNil(t, run, "the parked run's checkpoint is there to resume from")
			assert.Equal(t, parked, run.ExecID)

			// Deleting the session removes the record and the parked run.
			require.NoError(t, s.Delete(ctx, state.RunID))
			require.NoError(t, s.Delete(ctx, sessionID))
			ids, err = s.List(ctx)
			require.NoError(t, err)
			assert.Empty(t, ids)
		})
	}
}
