package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 10.2.12: a recording names its document relative to its own directory, and
// corral replay builds and runs that deployment. A recording someone
// handed over must not make replay load a document outside both the
// recording's directory and the working directory (an absolute path, or
// "../" that climbs out of both): replay exits 2 and asks for the DOC
// argument instead of building whatever deployment the header names.
func TestReplayHeaderDocumentStaysNear(t *testing.T) {
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

// REF 10.3.2: --out naming the recording being forked would replace the parent with
// its child (whose header names the parent by the digest of a file that
// is then gone): refused, and the parent is left as it was.
func TestReplayForkKeepsItsParent(t *testing.T) {
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

// REF 10.2.12: a recording written by corral run --record into a
// subdirectory names its document with "../": the document is under the
// working directory, and the recording replays without DOC.
func TestReplayRecordingInASubdirectory(t *testing.T) {
	src := filepath.Join("..", "..", "replay", "testdata", "replay")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "dice"), os.DirFS(filepath.Join(src, "dice"))))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o750))
	t.Chdir(dir)
	_, errOut, code := runArgs(t, "Ada\n", "run", filepath.Join("dice", "deploy.yaml"), "--fresh", "--message", "roll", "--record", filepath.Join("sub", "x.jsonl"))
	require.Equal(t, exitOK, code, errOut)
	data, err := os.ReadFile(filepath.Join("sub", "x.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"document":"../dice/deploy.yaml"`)
	out, errOut, code := runArgs(t, "", "replay", filepath.Join("sub", "x.jsonl"))
	assert.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "identical")
}

// REF 10.3.2: --out is written whole or not at all, through a file in its
// directory renamed over it: no temporary file is left, and a fork into a
// link to its parent is refused like one into the parent.
func TestReplayForkWritesWhole(t *testing.T) {
	src := filepath.Join("..", "..", "replay", "testdata", "replay")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "dice"), os.DirFS(filepath.Join(src, "dice"))))
	parent, err := os.ReadFile(filepath.Join(src, "dice.jsonl"))
	require.NoError(t, err)
	file := filepath.Join(dir, "dice.jsonl")
	require.NoError(t, os.WriteFile(file, parent, 0o644))
	link := filepath.Join(dir, "link.jsonl")
	require.NoError(t, os.Symlink(file, link))
	out, errOut, code := runArgs(t, "", "replay", "--set", `3="Grace"`, "--out", link, file)
	assert.Equal(t, exitBadInput, code, out+errOut)
	child := filepath.Join(dir, "child.jsonl")
	require.NoError(t, os.WriteFile(child, []byte("old\n"), 0o644))
	out, errOut, code = runArgs(t, "", "replay", "--set", `3={"parts":[{"type":"text","text":"Grace"}]}`, "--out", child, file)
	require.Equal(t, exitOK, code, out+errOut)
	data, err := os.ReadFile(child)
	require.NoError(t, err)
	assert.Contains(t, string(data), "Grace rolled")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"dice", "dice.jsonl", "link.jsonl", "child.jsonl"}, names)
}

// REF 10.2.13: what corral replay prints from a recording is escaped: a
// divergence at a node named with an escape sequence prints it as \x1b.
func TestReplayPrintsEscaped(t *testing.T) {
	src := filepath.Join("..", "..", "replay", "testdata", "replay")
	data, err := os.ReadFile(filepath.Join(src, "dice.jsonl"))
	require.NoError(t, err)
	// An input no node takes, at a node named with an escape sequence.
	evil := strings.Replace(string(data), `{"kind":"event"`,
		`{"kind":"input","n":7,"node":"ro\u001b[2Kll","call":1,"func":"now","args":[],"result":{"unix_ms":1}}`+"\n"+`{"kind":"event"`, 1)
	require.NotEqual(t, string(data), evil)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "dice"), os.DirFS(filepath.Join(src, "dice"))))
	file := filepath.Join(dir, "evil.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(evil), 0o644))
	out, errOut, code := runArgs(t, "", "replay", file)
	assert.Equal(t, exitFailed, code, out+errOut)
	assert.NotContains(t, out, "\x1b")
	assert.Contains(t, out, `\x1b[2K`)
}
