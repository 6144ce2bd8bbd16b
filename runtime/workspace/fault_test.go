package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A write whose rename fails leaves the old content and no temporary file.
func TestFailedRenameLeavesNoTempFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws, err := NewLocal(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	require.NoError(t, ws.Write(ctx, "dir/file", []byte("old")))

	var renamedFrom string
	ws.rename = func(from, to string) error {
		renamedFrom = from
		return &os.LinkError{Op: "renameat", Old: from, New: to, Err: errors.New("injected failure")}
	}
	err = ws.Write(ctx, "dir/file", []byte("new"))
	require.ErrorIs(t, err, fault.Internal)
	assert.Contains(t, err.Error(), `"dir/file"`)
	assert.Contains(t, err.Error(), "injected failure")
	assert.Regexp(t, `^dir/\.corral-tmp-[0-9a-f]{16}$`, renamedFrom, "the temporary file sits beside its target")

	entries, err := os.ReadDir(filepath.Join(ws.Root(), "dir"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the live file remains")
	assert.Equal(t, "file", entries[0].Name())
	got, err := os.ReadFile(filepath.Join(ws.Root(), "dir", "file"))
	require.NoError(t, err)
	assert.Equal(t, "old", string(got))

	err = ws.Rename(ctx, "dir/file", "elsewhere")
	require.ErrorIs(t, err, fault.Internal)
	ok, err := ws.Exists(ctx, "dir/file")
	require.NoError(t, err)
	assert.True(t, ok, "a failed rename moves nothing")
}

func TestTempNames(t *testing.T) {
	t.Parallel()
	for range 8 {
		n := tempName("a/b")
		assert.Regexp(t, `^a/b/\.corral-tmp-[0-9a-f]{16}$`, n)
		assert.True(t, isTempName(n[len("a/b/"):]))
	}
	assert.Regexp(t, `^\.corral-tmp-[0-9a-f]{16}$`, tempName("."))
	for _, n := range []string{".corral-tmp-", ".corral-tmp-0123456789abcdeF", ".corral-tmp-0123456789abcdef0", "x.corral-tmp-0123456789abcdef"} {
		assert.False(t, isTempName(n), n)
	}
}
