package replay_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 10.1.3, REF 10.2.11: a WebAssembly node's random stream and wall clock come from
// the recording: two live runs stream different bytes, and a replay of
// each streams its own.
func TestReplayWasmRandomAndClock(t *testing.T) {
	t.Parallel()
	doc, err := deploy.ParseFile("testdata/replay/wasm-dice/deploy.yaml")
	require.NoError(t, err)
	ctx := context.Background()
	turn := replay.TurnConfig{Document: doc, NewBuilder: builtin.NewBuilder, Agent: "wasm-dice",
		Request: agent.Request{Message: message.NewTextMessage(message.RoleUser, "roll")}}
	var streamed []string
	for range 2 {
		rec, res, err := replay.Record(ctx, turn)
		require.NoError(t, err)
		require.Equal(t, agent.StatusCompleted, res.Status)
		funcs := map[string]bool{}
		for _, in := range rec.Inputs {
			funcs[in.Func] = true
		}
		assert.True(t, funcs["now"] && funcs["random"], "the guest's clock and random stream read the host's: %v", funcs)
		rep, err := replay.Replay(ctx, rec, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
		require.NoError(t, err)
		assert.True(t, rep.Identical, "%v", rep.Divergence)
		// Without its random input the replay diverges, although the guest
		// swallows the failed read: the recording lacks an input it asked for.
		cut := *rec
		cut.Inputs = nil
		for _, in := range rec.Inputs {
			if in.Func != "random" {
				in.N = len(cut.Inputs) + 1
				cut.Inputs = append(cut.Inputs, in)
			}
		}
		rep, err = replay.Replay(ctx, &cut, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
		require.NoError(t, err)
		require.False(t, rep.Identical)
		assert.Equal(t, "input", rep.Divergence.What)
		assert.Equal(t, "roll", rep.Divergence.Node)
		assert.Equal(t, "random", rep.Divergence.Func)
		assert.Equal(t, "module roll.wasm", rep.Divergence.Where, "a wasm node's divergence names its module")
		for _, ev := range rec.Events {
			if ev.Node == "roll" && bytes.Contains(ev.Payload, []byte(`"text"`)) {
				streamed = append(streamed, string(ev.Payload))
			}
		}
	}
	require.Len(t, streamed, 2)
	assert.NotEqual(t, streamed[0], streamed[1], "each run has its own random stream")
}

// The committed roll.wasm is what wat2wasm makes of roll.wat today. The
// comparison needs wat2wasm (Debian: wabt).
func TestWasmDiceIsCurrent(t *testing.T) {
	t.Parallel()
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not installed (Debian: apt-get install wabt)")
	}
	dir := filepath.Join("testdata", "replay", "wasm-dice")
	out := filepath.Join(t.TempDir(), "roll.wasm")
	msg, err := exec.Command(tool, filepath.Join(dir, "roll.wat"), "-o", out).CombinedOutput()
	require.NoError(t, err, "%s", msg)
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(dir, "roll.wasm"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "roll.wasm is stale: wat2wasm roll.wat -o roll.wasm")
}
