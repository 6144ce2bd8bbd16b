package demo_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/cmd/corral/internal/demo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Extract writes every file of FS, byte for byte, and the files of FS are
// the files of this directory.
func TestExtractWritesEveryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file, err := demo.Extract(dir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, demo.Document), file)
	var names []string
	err = fs.WalkDir(demo.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, name)
		want, err := fs.ReadFile(demo.FS(), name)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		require.NoError(t, err)
		assert.Equal(t, want, got, name)
		onDisk, err := os.ReadFile(filepath.FromSlash(name))
		require.NoError(t, err)
		assert.Equal(t, onDisk, want, name)
		return nil
	})
	require.NoError(t, err)
	assert.Contains(t, names, demo.Document)
	assert.Contains(t, names, "graph.yaml")
	assert.Contains(t, names, "scripts/ask.js")
	assert.Contains(t, names, "replies.yaml")
	assert.Contains(t, names, "tools/word_count.js")
}

func TestExtractCreatesDirectories(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	file, err := demo.Extract(dir)
	require.NoError(t, err)
	assert.FileExists(t, file)
}

func TestExtractOverAFileFails(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err := demo.Extract(file)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "extract demo")
}
