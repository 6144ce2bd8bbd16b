package workspace_test

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newLocal(t *testing.T, cfg workspace.Config) *workspace.Local {
	t.Helper()
	ws, err := workspace.NewLocalWithConfig(filepath.Join(t.TempDir(), "ws"), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

func TestWriteReadRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newLocal(t, workspace.Config{})
	require.NoError(t, ws.Write(ctx, "a/b/c.txt", []byte("one")))
	got, err := ws.Read(ctx, "a/b/c.txt")
	require.NoError(t, err)
	assert.Equal(t, "one", string(got))

	require.NoError(t, ws.Write(ctx, "./a//b/c.txt", []byte("two")), "an unclean path names the same file")
	got, err = ws.Read(ctx, "a/b/c.txt")
	require.NoError(t, err)
	assert.Equal(t, "two", string(got))

	require.NoError(t, ws.Write(ctx, "empty", nil))
	got, err = ws.Read(ctx, "empty")
	require.NoError(t, err)
	assert.Empty(t, got)

	onDisk, err := os.ReadFile(filepath.Join(ws.Root(), "a", "b", "c.txt"))
	require.NoError(t, err)
	assert.Equal(t, "two", string(onDisk))
	assert.True(t, filepath.IsAbs(ws.Root()))
}

func TestMissingIsNotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newLocal(t, workspace.Config{})
	require.NoError(t, ws.Write(ctx, "file", []byte("x")))
	for _, p := range []string{"nope", "dir/nope", "file/below"} {
		_, err := ws.Read(ctx, p)
		require.ErrorIs(t, err, fault.NotFound, p)
		if p != "file/below" {
			assert.ErrorIs(t, err, fs.ErrNotExist, p)
		}
		assert.Contains(t, err.Error(), fmt.Sprintf("%q", p))
		ok, err := ws.Exists(ctx, p)
		require.NoError(t, err, p)
		assert.False(t, ok, p)
		assert.ErrorIs(t, ws.Delete(ctx, p), fault.NotFound, p)
		assert.ErrorIs(t, ws.Rename(ctx, p, "elsewhere"), fault.NotFound, p)
	}
	_, err := ws.List(ctx, "nodir")
	assert.ErrorIs(t, err, fault.NotFound)
}

func TestExistsDeleteList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newLocal(t, workspace.Config{})
	for _, p := range []string{"b.txt", "a.txt", "sub/c.txt", "sub/deeper/d.txt"} {
		require.NoError(t, ws.Write(ctx, p, []byte(p)))
	}
	names, err := ws.List(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt", "b.txt", "sub/"}, names)
	names, err = ws.List(ctx, "sub")
	require.NoError(t, err)
	assert.Equal(t, []string{"c.txt", "deeper/"}, names)

	for _, p := range []string{"", ".", "sub", "sub/c.txt"} {
		ok, err := ws.Exists(ctx, p)
		require.NoError(t, err)
		assert.True(t, ok, p)
	}
	assert.ErrorIs(t, ws.Delete(ctx, "sub"), fault.Conflict, "a directory that is not empty")
	require.NoError(t, ws.Delete(ctx, "sub/deeper/d.txt"))
	require.NoError(t, ws.Delete(ctx, "sub/deeper"), "an empty directory")
	ok, err := ws.Exists(ctx, "sub/deeper")
	require.NoError(t, err)
	assert.False(t, ok)

	_, err = ws.List(ctx, "a.txt")
	assert.ErrorIs(t, err, fault.Validation, "listing a file")
	_, err = ws.Read(ctx, "sub")
	assert.ErrorIs(t, err, fault.Validation, "reading a directory")
}

func TestListHidesTemporaryFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newLocal(t, workspace.Config{})
	require.NoError(t, ws.Write(ctx, "keep", []byte("x")))
	stale := filepath.Join(ws.Root(), ".corral-tmp-0123456789abcdef")
	require.NoError(t, os.WriteFile(stale, []byte("half"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(ws.Root(), ".corral-tmp-notatemp"), nil, 0o600))
	names, err := ws.List(ctx, ".")
	require.NoError(t, err)
	assert.Equal(t, []string{".corral-tmp-notatemp", "keep"}, names)
}

func TestRename(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newLocal(t, workspace.Config{})
	require.NoError(t, ws.Write(ctx, "from", []byte("new")))
	require.NoError(t, ws.Write(ctx, "to/x", []byte("old")))
	require.NoError(t, ws.Rename(ctx, "from", "to/x"), "replaces an existing file")
	got, err := ws.Read(ctx, "to/x")
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	ok, err := ws.Exists(ctx, "from")
	require.NoError(t, err)
	assert.False(t, ok)

	require.NoError(t, ws.Rename(ctx, "to/x", "made/for/it/x"), "creates parents")
	got, err = ws.Read(ctx, "made/for/it/x")
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	assert.ErrorIs(t, ws.Rename(ctx, "made/for/it/x", "../x"), fault.Forbidden)
	assert.ErrorIs(t, ws.Rename(ctx, "made/for/it/x", ""), fault.Validation)
}

func TestParentThatIsAFileIsConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newLocal(t, workspace.Config{})
	require.NoError(t, ws.Write(ctx, "a", []byte("x")))
	err := ws.Write(ctx, "a/b", []byte("y"))
	require.ErrorIs(t, err, fault.Conflict)
	assert.Contains(t, err.Error(), `"a/b"`)
}

func TestSizeCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newLocal(t, workspace.Config{MaxFileBytes: 8})
	assert.Equal(t, int64(8), ws.MaxFileBytes())
	require.NoError(t, ws.Write(ctx, "ok", []byte("12345678")))
	err := ws.Write(ctx, "big", []byte("123456789"))
	require.ErrorIs(t, err, fault.BudgetExceeded)
	assert.Contains(t, err.Error(), `"big"`)
	assert.Contains(t, err.Error(), "max_file_bytes")

	require.NoError(t, os.WriteFile(filepath.Join(ws.Root(), "outside-write"), []byte("123456789"), 0o600))
	_, err = ws.Read(ctx, "outside-write")
	require.ErrorIs(t, err, fault.BudgetExceeded)
	assert.Contains(t, err.Error(), `"outside-write"`)
	assert.Equal(t, workspace.DefaultMaxFileBytes, newLocal(t, workspace.Config{}).MaxFileBytes())
	huge := newLocal(t, workspace.Config{MaxFileBytes: math.MaxInt64})
	require.NoError(t, huge.Write(ctx, "f", []byte("still readable")))
	got, err := huge.Read(ctx, "f")
	require.NoError(t, err, "a huge cap does not overflow")
	assert.Equal(t, "still readable", string(got))
}

func TestNewLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	cases := []struct {
		name string
		root string
		cfg  workspace.Config
		kind *fault.Kind
	}{
		{"blank root", " ", workspace.Config{}, fault.Validation},
		{"negative cap", filepath.Join(dir, "n"), workspace.Config{MaxFileBytes: -1}, fault.Validation},
		{"missing without create", filepath.Join(dir, "missing"), workspace.Config{MustExist: true}, fault.NotFound},
		{"root is a file", file, workspace.Config{}, fault.Validation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := workspace.NewLocalWithConfig(tc.root, tc.cfg)
			assert.ErrorIs(t, err, tc.kind)
		})
	}
	_, err := workspace.Open(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fault.NotFound)
	ws, err := workspace.NewLocal(filepath.Join(dir, "made", "deep"))
	require.NoError(t, err)
	require.NoError(t, ws.Close())
	ws, err = workspace.Open(filepath.Join(dir, "made", "deep"))
	require.NoError(t, err)
	require.NoError(t, ws.Close())
}

func TestCloseIsIdempotentAndFinal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newLocal(t, workspace.Config{})
	require.NoError(t, ws.Write(ctx, "f", []byte("x")))
	require.NoError(t, ws.Close())
	require.NoError(t, ws.Close())
	_, err := ws.Read(ctx, "f")
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.ErrorIs(t, ws.Write(ctx, "f", nil), fault.NotAvailable)
	_, err = ws.List(ctx, "")
	assert.ErrorIs(t, err, fault.NotAvailable)
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	ws := newLocal(t, workspace.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, ws.Write(ctx, "f", []byte("x")), fault.Aborted)
	_, err := ws.Read(ctx, "f")
	assert.ErrorIs(t, err, context.Canceled)
	ok, err := ws.Exists(context.Background(), "f")
	require.NoError(t, err)
	assert.False(t, ok, "a cancelled write writes nothing")
}

// Overlapping writes of one path leave one whole content, and readers never
// see a mix of two.
func TestConcurrentWritesNeverTear(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newLocal(t, workspace.Config{})
	const writers, rounds, size = 8, 10, 64 << 10
	contents := make([][]byte, writers)
	for i := range contents {
		contents[i] = []byte(strings.Repeat(string(rune('a'+i)), size))
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds*2)
	for i := range writers {
		wg.Go(func() {
			for range rounds {
				errs <- ws.Write(ctx, "shared", contents[i])
			}
		})
		wg.Go(func() {
			for range rounds {
				got, err := ws.Read(ctx, "shared")
				if fault.Is(err, fault.NotFound) {
					continue
				}
				if err == nil && (len(got) != size || strings.Count(string(got), string(got[:1])) != size) {
					err = fmt.Errorf("torn read: %d bytes starting %q", len(got), got[:1])
				}
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got, err := ws.Read(ctx, "shared")
	require.NoError(t, err)
	assert.Contains(t, contents, got)
	names, err := ws.List(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"shared"}, names)
	entries, err := os.ReadDir(ws.Root())
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
}
