package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func replayFile(t *testing.T, file string) *replay.Report {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	rec, err := replay.DecodeBytes(data)
	require.NoError(t, err)
	doc, err := deploy.ParseFile(filepath.Join(filepath.Dir(file), rec.Header.Document))
	require.NoError(t, err)
	rep, err := replay.Replay(context.Background(), rec, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
	require.NoError(t, err)
	return rep
}

// REF 10.2.2, REF 10.2.3, REF 10.2.10: each bad fixture diverges, and the report names the node, the call and,
// for a script's own call, the script position.
func TestReplayDivergences(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file  string
		want  replay.Divergence
		where string
	}{
		{"bad-reordered", replay.Divergence{What: "input", Node: "roll", Call: 1, HostCall: 1, Func: "random"}, "scripts/roll.js:3:"},
		{"bad-changed-line", replay.Divergence{What: "event", Node: "roll", Index: 1}, "scripts/roll.js:10:"},
		{"bad-model-request", replay.Divergence{What: "input", Node: "model", Call: 1, Func: "inference"}, ""},
		{"bad-missing-input", replay.Divergence{What: "input", Node: "roll", Call: 5, HostCall: 5, Func: "now"}, "scripts/roll.js:7:"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			rep := replayFile(t, "testdata/replay/"+tc.file+".jsonl")
			require.False(t, rep.Identical)
			d := rep.Divergence
			assert.Equal(t, tc.want.What, d.What)
			assert.Equal(t, tc.want.Node, d.Node)
			assert.Equal(t, tc.want.Call, d.Call)
			assert.Equal(t, tc.want.Func, d.Func)
			assert.Equal(t, tc.want.HostCall, d.HostCall)
			assert.Equal(t, tc.want.Index, d.Index)
			assert.True(t, strings.HasPrefix(d.Where, tc.where), "where %q", d.Where)
			assert.NotEmpty(t, d.Diff, "a structural diff of expected against got")
		})
	}
}

// REF 10.3.1: a fork substitutes one input and names its parent; the forked run
// replays identically from its own recording.
func TestFork(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/replay/dice.jsonl")
	require.NoError(t, err)
	rec, err := replay.DecodeBytes(data)
	require.NoError(t, err)
	doc, err := deploy.ParseFile("testdata/replay/dice/deploy.yaml")
	require.NoError(t, err)
	cfg := replay.Config{Document: doc, NewBuilder: builtin.NewBuilder}
	n, v, err := replay.ParseSet(`3={"parts":[{"type":"text","text":"Grace"}]}`)
	require.NoError(t, err)
	child, _, err := replay.Fork(context.Background(), rec, n, v, cfg)
	require.NoError(t, err)
	require.NotNil(t, child.Header.Parent)
	assert.Equal(t, 3, child.Header.Parent.Input)
	assert.Equal(t, rec.Header.RunID, child.Header.Parent.RunID)
	require.NotNil(t, child.Result)
	// The fork's answer replaces the parent's; the dice it rolled stay.
	rolled := regexp.MustCompile(`Ada rolled (\d+ and \d+)`).FindStringSubmatch(string(data))
	require.NotNil(t, rolled, "the parent recording names Ada's roll")
	assert.Contains(t, string(encoded(t, child)), "Grace rolled "+rolled[1])
	rep, err := replay.Replay(context.Background(), child, cfg)
	require.NoError(t, err)
	assert.True(t, rep.Identical, "%v", rep.Divergence)
	_, _, err = replay.Fork(context.Background(), rec, 99, v, cfg)
	assert.True(t, fault.Is(err, fault.Validation))
}

// REF 10.1.1, REF 10.1.2
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	header := `{"kind":"header","format":1,"agent":"a","context":"c","run_id":"r","seeds":{"pcg":[0,0]},"request":{"message":{"role":"","parts":null}}}`
	input := `{"kind":"input","n":1,"node":"x","call":1,"func":"now","args":[],"result":1}`
	for name, tc := range map[string]struct{ text, want string }{
		"newer format":  {strings.Replace(header, `"format":1`, `"format":2`, 1), "newer than 1"},
		"no header":     {input, "first line must be the header"},
		"empty":         {"", "no header"},
		"unknown field": {strings.Replace(header, `"agent"`, `"agentx":1,"agent"`, 1), "unknown field"},
		"bad n":         {header + "\n" + strings.Replace(input, `"n":1`, `"n":2`, 1), "n 2, want 1"},
		"out of order":  {header + "\n" + `{"kind":"result","status":"completed"}` + "\n" + input, "line 3"},
		"both":          {header + "\n" + strings.Replace(input, `"result":1`, `"result":1,"error":{"code":"internal","message":"x"}`, 1), "exactly one"},
		"not json":      {header + "\n{", "line 2"},
	} {
		_, err := replay.DecodeBytes([]byte(tc.text))
		require.Error(t, err, name)
		assert.True(t, fault.Is(err, fault.Validation), name)
		assert.Contains(t, err.Error(), tc.want, name)
	}
}

// A recording survives its own encoding unchanged.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/replay/dice.jsonl")
	require.NoError(t, err)
	rec, err := replay.DecodeBytes(data)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(encoded(t, rec)))
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"dice", "bad-missing-input"} {
		data, err := os.ReadFile("testdata/replay/" + name + ".jsonl")
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(`{"kind":"header","format":9}`))
	f.Add([]byte(`{"kind":"header","format":1,"agent":"a","context":"c","run_id":"r","seeds":{"pcg":[0,0]},"request":{"message":{"role":"","parts":null}},"start":{"history":{"vars":{"n":1},"channels":{"__main_channel":[{"role":"user","parts":[{"type":"text","text":"hi"}]}]}}}}` + "\n" +
		`{"kind":"input","n":1,"node":"x","call":1,"func":"interrupt","args":["after_wave"],"result":{"cause":"user_cancel"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := replay.DecodeBytes(data)
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("not a validation error: %v", err)
			}
			return
		}
		again, err := replay.DecodeBytes(encoded(t, rec))
		if err != nil {
			t.Fatalf("a decoded recording does not decode again: %v", err)
		}
		if string(encoded(t, again)) != string(encoded(t, rec)) {
			t.Fatal("re-encoding changed the recording")
		}
	})
}
