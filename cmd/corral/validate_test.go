package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-rt/corral/sandbox/wasm/wasmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validate compiles every node script: a JavaScript syntax error in a
// script file is bad input (exit 2) reported at the script's file and
// line, by validate and by run alike.
func TestCLIValidateReportsScriptSyntaxErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"validate", "testdata/syntax/deploy.yaml"},
		{"run", "testdata/syntax/deploy.yaml", "--message", "hi"},
	} {
		stdout, stderr, code := runCorral(t, args...)
		assert.Equal(t, exitBadInput, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "testdata/syntax/hello.js:3: ", args)
		assert.Contains(t, stderr, "line 3:14: Unexpected token ;", args)
		assert.NotContains(t, stdout, "ok", args)
	}
}

// A graph reference that is a named pipe, a directory or /dev/zero (by a
// link) makes validate exit 2 at once, naming the file; it used to block
// for ever on the pipe.
func TestCLIValidateRefusesIrregularFiles(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no named pipes in the file system")
	}
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "dir.yaml"), 0o755))
	doc, err := os.ReadFile("testdata/syntax/deploy.yaml")
	require.NoError(t, err)
	for _, tc := range []struct{ graph, want string }{
		{"fifo.yaml", `"fifo.yaml": a named pipe, not a regular file`},
		{"dir.yaml", `"dir.yaml": a directory, not a regular file`},
	} {
		path := filepath.Join(dir, "deploy-"+tc.graph)
		require.NoError(t, os.WriteFile(path, []byte(replaceGraph(string(doc), tc.graph)), 0o644))
		_, stderr, code := runCorral(t, "validate", path)
		assert.Equal(t, exitBadInput, code, stderr)
		assert.Contains(t, stderr, tc.want)
	}
	_, stderr, code := runCorral(t, "validate", filepath.Join(dir, "fifo.yaml"))
	assert.Equal(t, exitBadInput, code, stderr)
	assert.Contains(t, stderr, "a named pipe, not a regular file")
}

func replaceGraph(doc, graph string) string {
	return strings.Replace(doc, "graph: {file: graph.yaml}", "graph: {file: "+graph+"}", 1)
}

// examples/mixed runs with the CLI as it is: its Go guest (a few
// megabytes, over the 1 MiB cap of documents) loads under the module cap,
// and validate compiles it. Its turn, recorded, replays identically: its
// JavaScript node and its Go guest take their inputs from the recording.
func TestCLIRunsTheMixedExample(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a Go guest")
	}
	dir := t.TempDir()
	guests, err := wasmtest.NewBuilder(t.TempDir())
	require.NoError(t, err)
	module := guests.Build(t, "examples/mixed/guest")
	require.Greater(t, len(module), 1<<20, "the guest is over the documents' cap")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "count.wasm"), module, 0o644))
	doc, err := os.ReadFile("../../examples/mixed/deploy.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.yaml"), doc, 0o644))

	_, stderr, code := runCorral(t, "validate", filepath.Join(dir, "deploy.yaml"))
	require.Equal(t, exitOK, code, stderr)
	recording := filepath.Join(dir, "mixed.jsonl")
	stdout, stderr, code := runCorral(t, "run", filepath.Join(dir, "deploy.yaml"), "--message", "count these four words",
		"--record", recording)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "Your message has 4 words.")
	stdout, stderr, code = runCorral(t, "replay", recording)
	require.Equal(t, exitOK, code, stdout+stderr)
	assert.Contains(t, stdout, "identical")
}
