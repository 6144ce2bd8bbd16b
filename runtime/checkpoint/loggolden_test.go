package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A log holding a snapshot and two deltas is byte for byte the golden
// file, and the golden file loads as the last checkpoint saved: the log
// format is pinned, and logs written now stay readable.
// REF 7.9
func TestLogFormatGolden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newWorkspace(t)
	s := newStore(t, ws, "")
	w := checkpointtest.NewWriter(s, checkpointtest.NewCheckpoint("run-0123456789abcdef", 1), 7)
	require.NoError(t, w.Save(ctx))
	w.Set("count", 2.0)
	w.Unset("nothing")
	w.CP.Iteration = 2
	require.NoError(t, w.Save(ctx))
	w.Append("main", message.NewTextMessage(message.RoleAssistant, "done"))
	w.CP.Iteration = 3
	require.NoError(t, w.Save(ctx))
	got, err := os.ReadFile(filepath.Join(ws.Root(), filepath.FromSlash(s.Path("run-0123456789abcdef"))))
	require.NoError(t, err)
	golden := filepath.Join("testdata", "checkpoint.golden.log")
	if *update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, want, got, "run go test -update to accept a format change")

	other := newWorkspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(other.Root(), checkpoint.DefaultPrefix), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(other.Root(), checkpoint.DefaultPrefix, "run-0123456789abcdef.log"), want, 0o640))
	loaded, err := newStore(t, other, "").Load(ctx, "run-0123456789abcdef")
	require.NoError(t, err)
	want2 := w.CP.Clone()
	want2.Changes = nil
	assert.Equal(t, want2, *loaded)
}
