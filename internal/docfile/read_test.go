//go:build unix

package docfile_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/internal/docfile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readPromptly calls ReadFile and fails the test if it does not return
// within a few seconds: a read that blocks is the defect under test.
func readPromptly(t *testing.T, root *os.Root, name string, max int64) ([]byte, error) {
	t.Helper()
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := docfile.ReadFile(root, name, max)
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("ReadFile(%q) blocked", name)
		return nil, nil
	}
}

// Every file that is not regular is refused at once, with a Validation
// error saying what it is, whether it is named directly or
// through a symbolic link, inside a root or not.
func TestReadFileRefusesIrregularFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Symlink("fifo", filepath.Join(dir, "link-to-fifo")))
	require.NoError(t, os.Symlink("sub", filepath.Join(dir, "link-to-dir")))
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	for _, tc := range []struct {
		name string
		root *os.Root
		what string
	}{
		{"fifo", root, "a named pipe"},
		{"link-to-fifo", root, "a named pipe"},
		{"sub", root, "a directory"},
		{"link-to-dir", root, "a directory"},
		{filepath.Join(dir, "fifo"), nil, "a named pipe"},
		{filepath.Join(dir, "link-to-fifo"), nil, "a named pipe"},
		{"/dev/zero", nil, "a character device"},
		{"/dev/null", nil, "a character device"},
	} {
		t.Run(strings.ReplaceAll(tc.name, "/", "_"), func(t *testing.T) {
			_, err := readPromptly(t, tc.root, tc.name, 1<<20)
			require.Error(t, err)
			assert.True(t, fault.Is(err, fault.Validation), "%v", err)
			assert.Equal(t, tc.what+", not a regular file", err.Error())
		})
	}
}

// A regular file up to the cap is read whole; one byte more is refused
// before it is read, with the sizes in the message.
func TestReadFileCap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "doc.yaml")
	require.NoError(t, os.WriteFile(path, []byte("0123456789"), 0o644))
	data, err := docfile.ReadFile(nil, path, 10)
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(data))

	_, err = docfile.ReadFile(nil, path, 9)
	require.Error(t, err)
	assert.True(t, fault.Is(err, fault.Validation))
	assert.Contains(t, err.Error(), "the file is 10 bytes: larger than 9 bytes, the cap")

	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	data, err = docfile.ReadFile(nil, empty, 9)
	require.NoError(t, err)
	assert.Empty(t, data)
}

// A missing file keeps fs.ErrNotExist in its chain, and a root still
// refuses a path that leaves it.
func TestReadFileOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := docfile.ReadFile(nil, filepath.Join(dir, "missing"), 10)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	_, err = docfile.ReadFile(root, "../outside", 10)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "escapes")
}
