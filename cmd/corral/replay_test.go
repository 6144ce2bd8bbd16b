package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/delegation/hostwrap"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runArgs runs the command with stdin and returns its output and exit
// code.
func runArgs(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, stdio{in: strings.NewReader(stdin), out: &out, err: &errOut})
	return out.String(), errOut.String(), code
}

// failingModels is a registry whose scripted model provider fails every
// call: a replay that asked a model would fail.
func failingModels() *runtime.Builder {
	reg := builtin.Registry()
	out := resource.NewRegistry()
	for _, spec := range reg.Specs() {
		f, _ := reg.Lookup(spec.Kind, spec.Impl)
		if spec.Kind == "model.Provider" {
			f = failingFactory{f}
		}
		out.MustRegister(f)
	}
	b := runtime.NewBuilder(out)
	if err := b.WithResultHostFactory(hostwrap.Decorate); err != nil {
		panic(err)
	}
	return b
}

type failingFactory struct{ resource.Factory }

func (f failingFactory) New(ctx context.Context, in resource.Input) (any, error) {
	if _, err := f.Factory.New(ctx, in); err != nil {
		return nil, err
	}
	return failingProvider{}, nil
}

type failingProvider struct{}

func (failingProvider) Generate(context.Context, model.Request, func(model.Delta) error) (model.Response, error) {
	return model.Response{}, fault.New(fault.Internal, "test", "a replay called the model")
}

// The demo turn, with a steer line and a prompt answer, recorded by corral
// run --record, replays identically: its js nodes, its wasm node, its
// model and its tool, with a model that fails when called.
func TestReplayDemo(t *testing.T) {
	old := newReplayBuilder
	newReplayBuilder = failingModels
	t.Cleanup(func() { newReplayBuilder = old })
	file := filepath.Join("testdata", "replay", "demo.jsonl")
	if *update {
		_, errOut, code := runArgs(t, "/steer keep it short\nAda\n", "run", "--fresh", "--message", "hi", "--record", file)
		require.Equal(t, exitOK, code, errOut)
	}
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, want := range []string{`"func":"askUser"`, `"func":"drainSteer","args":[],"result":[{`, `"func":"inference"`,
		`"func":"tool"`, `"node":"stamp"`, `"node":"greet"`} {
		assert.Contains(t, string(data), want)
	}
	out, errOut, code := runArgs(t, "", "replay", file)
	assert.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "identical")

	// The same recording, replayed against a live model, still asks none.
	out, _, code = runArgs(t, "", "replay", "--json", file)
	require.Equal(t, exitOK, code)
	var res replayResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, "identical", res.Status)
}

// REF 10.2.6: each bad fixture exits 1 naming the node and the call; a fleet of
// recordings gives a line each and the worst exit code.
func TestReplayBadFixtures(t *testing.T) {
	dir := filepath.Join("..", "..", "replay", "testdata", "replay")
	for name, want := range map[string]string{
		"bad-reordered":     "input at node roll call 1 (random; host call 1) at scripts/roll.js:3:",
		"bad-changed-line":  "event at node roll #1 at scripts/roll.js:10:",
		"bad-model-request": "input at node model call 1 (inference)",
		"bad-missing-input": "input at node roll call 5 (now; host call 5) at scripts/roll.js:7:",
	} {
		out, errOut, code := runArgs(t, "", "replay", filepath.Join(dir, name+".jsonl"))
		assert.Equal(t, exitFailed, code, name+": "+out+errOut)
		assert.Contains(t, out, want, name)
	}
	out, _, code := runArgs(t, "", "replay", "--fleet", filepath.Join(dir, "dice", "deploy.yaml"),
		filepath.Join(dir, "dice.jsonl"), filepath.Join(dir, "bad-missing-input.jsonl"), "missing.jsonl")
	assert.Equal(t, exitBadInput, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out) // the missing input's diff takes a line
	assert.Contains(t, lines[0], "identical")
	assert.Contains(t, lines[1], "diverged at input at node roll call 5")
	assert.Contains(t, lines[3], "missing.jsonl\tfailed")
}

func TestReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.jsonl")
	require.NoError(t, os.WriteFile(newer, []byte(`{"kind":"header","format":7,"agent":"a","context":"c","run_id":"r"}`+"\n"), 0o644))
	for _, args := range [][]string{
		{"replay"},
		{"replay", newer},
		{"replay", "--set", "1=x", "f.jsonl"},
		{"replay", "a", "b", "c"},
	} {
		out, _, code := runArgs(t, "", args...)
		assert.Equal(t, exitBadInput, code, "%v", args)
		if len(args) == 2 {
			assert.Contains(t, out, "format version 7 is newer")
		}
	}
}

// REF 10.1.4: the OpenAI-compatible example, recorded against a local server, replays
// with the server gone: a replay makes no network call. The API key and
// the auth header are in no line of the recording.
func TestReplayOpenAIChatOffline(t *testing.T) {
	file := filepath.Join("testdata", "replay", "openai-chat.jsonl")
	if *update {
		srv := &chatServer{}
		ts := httptest.NewServer(srv)
		for _, kv := range chatEnv(ts.URL)[len(os.Environ()):] {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		_, errOut, code := runArgs(t, "", "run", openaiChat, "--message", "What is 12.5 times 8?", "--record", file)
		ts.Close()
		require.Equal(t, exitOK, code, errOut)
	}
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "sk-local-test")
	assert.NotContains(t, strings.ToLower(string(data)), "bearer")
	assert.Contains(t, string(data), `"func":"tool"`)

	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	for _, kv := range chatEnv(dead.URL)[len(os.Environ()):] {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	// The example lies outside both the recording's directory and the
	// working directory (REF 10.2.12): it is named.
	out, errOut, code := runArgs(t, "", "replay", file, openaiChat)
	assert.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "identical")
}

// REF 10.3.1: --set forks a recording into a new file naming its parent,
// which replays identically.
func TestReplayFork(t *testing.T) {
	dir := filepath.Join("..", "..", "replay", "testdata", "replay")
	child := filepath.Join(t.TempDir(), "child.jsonl")
	out, errOut, code := runArgs(t, "", "replay", "--set", `3={"parts":[{"type":"text","text":"Grace"}]}`, "--out", child,
		filepath.Join(dir, "dice.jsonl"))
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "forked into "+child)
	data, err := os.ReadFile(child)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"parent":{"run_id":`)
	assert.Contains(t, string(data), "Grace rolled")
	// The child lies elsewhere than its document and the working
	// directory: it names the document and replays against it once given.
	out, errOut, code = runArgs(t, "", "replay", child, filepath.Join(dir, "dice", "deploy.yaml"))
	assert.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "identical")
	_, _, code = runArgs(t, "", "replay", "--set", "99=1", "--out", child, filepath.Join(dir, "dice.jsonl"))
	assert.Equal(t, exitBadInput, code)
}

// The divergence docs/replay.md shows is what corral replay prints for
// the fixture.
func TestReplayDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "replay.md"))
	require.NoError(t, err)
	var want []string
	lines := strings.Split(string(doc), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "bad-reordered.jsonl\t") {
			want = lines[i : i+2]
		}
	}
	require.Len(t, want, 2, "docs/replay.md shows a divergence of bad-reordered.jsonl")
	dir := filepath.Join("..", "..", "replay", "testdata", "replay")
	out, _, code := runArgs(t, "", "replay", filepath.Join(dir, "bad-reordered.jsonl"))
	assert.Equal(t, exitFailed, code)
	assert.Equal(t, strings.Join(want, "\n")+"\n", strings.TrimPrefix(out, dir+string(filepath.Separator)))
}
