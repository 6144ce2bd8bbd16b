package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A recording names its document relative to its own directory, and
// corral replay builds and runs that deployment. A recording someone
// handed over must not make replay load a document outside both the
// recording's directory and the working directory (an absolute path, or
// "../" that climbs out of both): replay exits 2 and asks for the DOC
// argument instead of building whatever deployment the header names.
func TestReviewReplayHeaderDocumentStaysNear(t *testing.T) {
	src := filepath.Join("..", "..", "replay", "testdata", "replay")
	elsewhere := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(elsewhere, "dice"), os.DirFS(filepath.Join(src, "dice"))))
	data, err := os.ReadFile(filepath.Join(src, "dice.jsonl"))
	require.NoError(t, err)
	abs := filepath.ToSlash(filepath.Join(elsewhere, "dice", "deploy.yaml"))
	recDir := filepath.Join(t.TempDir(), "a", "b")
	require.NoError(t, os.MkdirAll(recDir, 0o750))
	rel, err := filepath.Rel(recDir, filepath.Join(elsewhere, "dice", "deploy.yaml"))
	require.NoError(t, err)
	for _, doc := range []string{abs, filepath.ToSlash(rel)} {
		evil := strings.Replace(string(data), `"document":"dice/deploy.yaml"`, `"document":"`+doc+`"`, 1)
		require.Contains(t, evil, doc)
		file := filepath.Join(recDir, "evil.jsonl")
		require.NoError(t, os.WriteFile(file, []byte(evil), 0o644))
		out, errOut, code := runArgs(t, "", "replay", file)
		assert.Equal(t, exitBadInput, code, "document %q: %s%s", doc, out, errOut)
		assert.NotContains(t, out, "identical", "document %q was built and run", doc)
	}
}

// --out naming the recording being forked would replace the parent with
// its child (whose header names the parent by the digest of a file that
// is then gone): refused, and the parent is left as it was.
func TestReviewReplayForkKeepsItsParent(t *testing.T) {
	src := filepath.Join("..", "..", "replay", "testdata", "replay")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "dice"), os.DirFS(filepath.Join(src, "dice"))))
	parent, err := os.ReadFile(filepath.Join(src, "dice.jsonl"))
	require.NoError(t, err)
	file := filepath.Join(dir, "dice.jsonl")
	require.NoError(t, os.WriteFile(file, parent, 0o644))
	out, errOut, code := runArgs(t, "", "replay", "--set", `3={"parts":[{"type":"text","text":"Grace"}]}`, "--out", file, file)
	assert.Equal(t, exitBadInput, code, out+errOut)
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(parent), string(after), "the parent recording was overwritten")
}
