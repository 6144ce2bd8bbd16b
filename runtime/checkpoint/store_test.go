package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newWorkspace(t testing.TB) *workspace.Local {
	t.Helper()
	ws, err := workspace.NewLocal(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

func newStore(t testing.TB, ws workspace.Workspace, prefix string) *checkpoint.Store {
	t.Helper()
	s, err := checkpoint.NewStore(ws, prefix)
	require.NoError(t, err)
	return s
}

// Both stores of the package pass the conformance suite.
// REF 7.2
// REF 7.7
// REF 7.8
// REF 7.11
func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("workspace", func(t *testing.T) {
		t.Parallel()
		checkpointtest.RunWith(t, func(t *testing.T) agent.CheckpointStore {
			return newStore(t, newWorkspace(t), "")
		}, checkpointtest.Options{Tear: tearLog})
	})
	t.Run("workspace sync none", func(t *testing.T) {
		t.Parallel()
		checkpointtest.RunWith(t, func(t *testing.T) agent.CheckpointStore {
			s, err := checkpoint.NewStoreWithConfig(newWorkspace(t), checkpoint.Config{Sync: checkpoint.SyncNone})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}, checkpointtest.Options{Tear: tearLog})
	})
	t.Run("workspace earlier format", func(t *testing.T) {
		t.Parallel()
		checkpointtest.Run(t, func(t *testing.T) agent.CheckpointStore {
			return newStore(t, otherWorkspace{newWorkspace(t)}, "")
		})
	})
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		checkpointtest.Run(t, func(*testing.T) agent.CheckpointStore { return checkpoint.NewMemory() })
	})
}

// The live record of a local workspace is the log <prefix>/<exec_id>.log,
// and no temporary file stays after a save.
// REF 7.4
func TestLayoutOnDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct{ prefix, dir string }{
		{"", "agent/checkpoints"},
		{"/", "agent/checkpoints"},
		{"/runs/archive/", "runs/archive"},
		{"runs", "runs"},
	} {
		ws := newWorkspace(t)
		s := newStore(t, ws, tc.prefix)
		assert.Equal(t, tc.dir, s.Prefix())
		require.NoError(t, s.Save(ctx, checkpointtest.NewCheckpoint("run-1", 1)))
		assert.Equal(t, tc.dir+"/run-1.log", s.Path("run-1"))
		raw, err := os.ReadFile(filepath.Join(ws.Root(), filepath.FromSlash(tc.dir), "run-1.log"))
		require.NoError(t, err, "prefix %q", tc.prefix)
		assert.True(t, strings.HasPrefix(string(raw), "CRLOG01\n"), "the log's magic")
		assert.Contains(t, string(raw), `"exec_id":"run-1"`)
		names, err := ws.List(ctx, tc.dir)
		require.NoError(t, err)
		assert.Equal(t, []string{"run-1.log"}, names, "no temporary file")
	}
}

// tearLog closes s, cuts the last five bytes of execID's log and appends
// three bytes of garbage, as a crash in the middle of an append leaves it,
// and opens the store again on the same workspace.
func tearLog(t *testing.T, s agent.CheckpointStore, execID string) agent.CheckpointStore {
	st := s.(*checkpoint.Store)
	require.NoError(t, st.Close())
	ws := st.Workspace().(*workspace.Local)
	file := filepath.Join(ws.Root(), filepath.FromSlash(st.Path(execID)))
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, append(raw[:len(raw)-5], 0xde, 0xad, 0x01), 0o640))
	return newStore(t, ws, st.Prefix())
}

// otherWorkspace is a workspace that is not a *workspace.Local: a store
// keeps the earlier format in it.
type otherWorkspace struct{ workspace.Workspace }

// renameFails is a workspace whose Rename fails and that records the paths
// written.
type renameFails struct {
	workspace.Workspace
	mu      sync.Mutex
	written []string
	rename  func(ctx context.Context, from, to string) error
}

func (w *renameFails) Write(ctx context.Context, p string, data []byte) error {
	w.mu.Lock()
	w.written = append(w.written, p)
	w.mu.Unlock()
	return w.Workspace.Write(ctx, p, data)
}

func (w *renameFails) Rename(ctx context.Context, from, to string) error {
	return w.rename(ctx, from, to)
}

// Save writes <prefix>/.tmp/<exec_id>.<nanos>-<16hex>.json.tmp and renames it; when
// the rename fails the temporary file is removed and the old record stays.
// REF 7.4
func TestFailedRenameRemovesTempFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newWorkspace(t)
	good := newStore(t, ws, "")
	require.NoError(t, good.Save(ctx, checkpointtest.NewCheckpoint("run-1", 1)))

	injected := errors.New("injected rename failure")
	faulty := &renameFails{Workspace: ws, rename: func(context.Context, string, string) error { return injected }}
	s := newStore(t, faulty, "")
	err := s.Save(ctx, checkpointtest.NewCheckpoint("run-1", 2))
	require.ErrorIs(t, err, injected)
	assert.Contains(t, err.Error(), `"run-1"`)
	require.Len(t, faulty.written, 1)
	assert.Regexp(t, `^agent/checkpoints/\.tmp/run-1\.[0-9]+-[0-9a-f]{16}\.json\.tmp$`, faulty.written[0])

	tmp, err := ws.List(ctx, "agent/checkpoints/.tmp")
	require.NoError(t, err)
	assert.Empty(t, tmp, "the temporary file is removed")
	got, err := good.Load(ctx, "run-1")
	require.NoError(t, err)
	assert.Equal(t, 1, got.Iteration, "the old record stays")
}

// The temporary file is removed even when the context is what made the
// rename fail.
// REF 7.4
func TestCancelledSaveRemovesTempFile(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	ctx, cancel := context.WithCancel(context.Background())
	faulty := &renameFails{Workspace: ws}
	faulty.rename = func(ctx context.Context, from, to string) error {
		cancel()
		return ws.Rename(ctx, from, to)
	}
	err := newStore(t, faulty, "").Save(ctx, checkpointtest.NewCheckpoint("run-1", 1))
	require.ErrorIs(t, err, fault.Aborted)
	tmp, err := ws.List(context.Background(), "agent/checkpoints/.tmp")
	require.NoError(t, err)
	assert.Empty(t, tmp)
}

// A record that is not valid JSON or fails Validate loads as a corrupt
// error of kind Internal that names the file.
// REF 7.5
func TestLoadCorrupt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newWorkspace(t)
	s := newStore(t, ws, "")
	cases := map[string]string{
		"not JSON":       `{"exec_id": "run-1", "board": `,
		"trailing data":  `{"exec_id":"run-1","board":{}} {}`,
		"null":           `null`,
		"no board":       `{"exec_id":"run-1"}`,
		"wrong exec id":  `{"exec_id":"run-2","board":{}}`,
		"exec id absent": `{"board":{}}`,
		"wrong types":    `{"exec_id":"run-1","board":{"vars":[]}}`,
		"bad iteration":  `{"exec_id":"run-1","board":{},"iteration":-3}`,
	}
	for why, raw := range cases {
		require.NoError(t, ws.Write(ctx, "agent/checkpoints/run-1.json", []byte(raw)))
		got, err := s.Load(ctx, "run-1")
		require.Error(t, err, why)
		assert.Nil(t, got, why)
		assert.ErrorIs(t, err, checkpoint.ErrCorrupt, why)
		assert.ErrorIs(t, err, fault.Internal, why)
		assert.NotErrorIs(t, err, fault.Validation, why)
		var ce *checkpoint.CorruptError
		require.ErrorAs(t, err, &ce, why)
		assert.Equal(t, "agent/checkpoints/run-1.json", ce.Where)
		assert.Contains(t, err.Error(), "agent/checkpoints/run-1.json is corrupt", why)
	}
	require.NoError(t, ws.Write(ctx, "agent/checkpoints/run-1.json", []byte(`{"exec_id":"run-1","board":{},"future_field":1}`)))
	got, err := s.Load(ctx, "run-1")
	require.NoError(t, err, "unknown fields of a newer version are ignored")
	assert.Equal(t, "run-1", got.ExecID)
}

// Missing records, a missing prefix directory and other workspace failures.
// REF 7.5
func TestLoadMissingAndFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newWorkspace(t)
	s := newStore(t, ws, "")
	got, err := s.Load(ctx, "run-1")
	require.NoError(t, err, "no prefix directory yet")
	assert.Nil(t, got)

	require.NoError(t, ws.Write(ctx, "agent/checkpoints/run-2.json/inside", []byte("x")))
	_, err = s.Load(ctx, "run-2")
	require.Error(t, err, "a directory where the record should be is an error, not a missing record")
	assert.Contains(t, err.Error(), `"run-2"`)

	require.NoError(t, ws.Close())
	_, err = s.Load(ctx, "run-1")
	assert.ErrorIs(t, err, fault.NotAvailable, "a closed workspace is reported")
}

// List returns the *.json names without the suffix, sorted, and ignores the
// temporary directory and anything else; Delete removes the live file.
// REF 7.5
func TestListAndDeleteOnDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newWorkspace(t)
	s := newStore(t, ws, "")
	for _, id := range []string{"a", "a-b", "run-1"} {
		require.NoError(t, s.Save(ctx, checkpointtest.NewCheckpoint(id, 1)))
	}
	for _, p := range []string{
		"agent/checkpoints/.tmp/run-9.0123456789abcdef.json.tmp",
		"agent/checkpoints/notes.txt",
		"agent/checkpoints/.json",
		"agent/checkpoints/nested/run-3.json",
		"agent/run-4.json",
	} {
		require.NoError(t, ws.Write(ctx, p, []byte("{}")))
	}
	ids, err := s.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "a-b", "run-1"}, ids)

	require.NoError(t, s.Delete(ctx, "run-1"))
	ok, err := ws.Exists(ctx, "agent/checkpoints/run-1.json")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, s.Delete(ctx, "run-1"), "a missing record is not an error")
	ok, err = ws.Exists(ctx, "agent/checkpoints/.tmp/run-9.0123456789abcdef.json.tmp")
	require.NoError(t, err)
	assert.True(t, ok, "Delete touches the live file only")

	empty, err := newStore(t, newWorkspace(t), "").List(ctx)
	require.NoError(t, err)
	assert.Empty(t, empty, "a store that never saved lists nothing")
}

// Exec ids: blank, '/', '\', "." and ".." are Validation errors; so are
// control characters and ids too long for a file name.
// REF 7.4
func TestValidateExecID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"run-0123456789abcdef", "session-x", "a.b", ".hidden", "...", "with space", "ünïcode", strings.Repeat("x", checkpoint.MaxExecIDBytes)} {
		assert.NoError(t, checkpoint.ValidateExecID(id), id)
	}
	for _, id := range []string{"", " ", "\t", "a/b", `a\b`, "/", `\`, ".", "..", "a\x00b", "a\nb", "a\x7fb", strings.Repeat("x", checkpoint.MaxExecIDBytes+1)} {
		err := checkpoint.ValidateExecID(id)
		assert.ErrorIs(t, err, fault.Validation, "%q", id)
	}
}

// NewStore trims the prefix and refuses one that is not a clean relative
// path.
// REF 1.8.1
func TestNewStorePrefix(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	for prefix, want := range map[string]string{"": "agent/checkpoints", "//": "agent/checkpoints", "/x/": "x", "x/y": "x/y", "a.b/c": "a.b/c"} {
		s, err := checkpoint.NewStore(ws, prefix)
		require.NoError(t, err, prefix)
		assert.Equal(t, want, s.Prefix(), prefix)
	}
	for _, prefix := range []string{"a//b", "a/./b", "a/../b", `a\b`, "a\x00b", "./a"} {
		_, err := checkpoint.NewStore(ws, prefix)
		assert.ErrorIs(t, err, fault.Validation, "%q", prefix)
	}
	// A prefix that climbs out of the workspace is refused as every path
	// that leaves a workspace is: Forbidden.
	for _, prefix := range []string{"../x", "..", "a/../../x"} {
		_, err := checkpoint.NewStore(ws, prefix)
		assert.ErrorIs(t, err, fault.Forbidden, "%q", prefix)
		assert.False(t, fault.Is(err, fault.Validation), "%q: %v", prefix, err)
		assert.ErrorContains(t, err, "escapes the workspace root", "%q", prefix)
	}
	_, err := checkpoint.NewStore(nil, "")
	assert.ErrorIs(t, err, fault.Validation)
}

// The first save of a store removes the temporary records earlier
// processes left behind, those whose name says they are older than an
// hour; a recent one (a save still running elsewhere), one whose name
// carries no time (an earlier version's save may still be writing it) and
// everything outside the temporary directory stay.
func TestFirstSaveSweepsOrphans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newWorkspace(t)
	dir := "agent/checkpoints/.tmp/"
	old := time.Now().Add(-time.Hour).UnixNano()
	recent := time.Now().Add(-30 * time.Minute).UnixNano()
	orphans := []string{
		dir + fmt.Sprintf("run-1.%d-0123456789abcdef.json.tmp", old),
		dir + fmt.Sprintf("a.b.%d-0123456789abcdef.json.tmp", old),  // an exec id with a dot
		dir + fmt.Sprintf("run-7.%d-0123456789abcdef.log.tmp", old), // a compaction's
	}
	kept := []string{
		dir + "run-2.0123456789abcdef.json.tmp", // a name without a time
		dir + fmt.Sprintf("run-3.%d-0123456789abcdef.json.tmp", recent),
		dir + fmt.Sprintf("run-8.%d-0123456789abcdef.log.tmp", recent),
		"agent/checkpoints/run-4.json",
	}
	for _, p := range append(slices.Clone(orphans), kept...) {
		require.NoError(t, ws.Write(ctx, p, []byte("{}")))
	}
	s := newStore(t, ws, "")
	require.NoError(t, s.Save(ctx, checkpointtest.NewCheckpoint("run-5", 1)))
	for _, p := range orphans {
		ok, err := ws.Exists(ctx, p)
		require.NoError(t, err)
		assert.False(t, ok, "%s is an orphan", p)
	}
	for _, p := range kept {
		ok, err := ws.Exists(ctx, p)
		require.NoError(t, err)
		assert.True(t, ok, "%s stays", p)
	}

	// Later saves do not list the directory again.
	late := dir + fmt.Sprintf("run-6.%d-0123456789abcdef.json.tmp", old)
	require.NoError(t, ws.Write(ctx, late, []byte("{}")))
	require.NoError(t, s.Save(ctx, checkpointtest.NewCheckpoint("run-5", 2)))
	ok, err := ws.Exists(ctx, late)
	require.NoError(t, err)
	assert.True(t, ok)
}
