package js_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The board writes of a call may not grow the board past max_board_bytes;
// overwriting or deleting a var frees its bytes, and the write that would
// pass the limit does not happen.
func TestBoardBytesLimit(t *testing.T) {
	t.Parallel()
	// A generous wall time: thirty writes of 100 KB values run long under
	// the race detector on a busy machine, and the limit under test is
	// the board's.
	rt := mustNew(t, js.Options{Limits: sandbox.Limits{MaxBoardBytes: 1 << 20, WallTime: time.Minute}})
	tests := []struct {
		name   string
		src    string
		hit    bool
		absent string // a var the refused write would have set
	}{
		{"setVar grows", `const s = "x".repeat(600000); board.setVar("a", s); board.setVar("b", s)`, true, "b"},
		{"overwrite", `for (let i = 0; i < 30; i++) board.setVar("a", "x".repeat(100000) + i)`, false, ""},
		{"delete frees", `for (let i = 0; i < 30; i++) { board.setVar("a" + i, "x".repeat(100000)); board.deleteVar("a" + i) }`, false, ""},
		{"appendChannel grows", `for (let i = 0; i < 2000; i++) board.appendChannel("c", {role: "assistant", parts: [{type: "text", text: "x".repeat(1000)}]})`, true, ""},
		{"setChannel replaces", `for (let i = 0; i < 30; i++) board.setChannel("c", [{role: "assistant", parts: [{type: "text", text: "x".repeat(100000)}]}])`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := invoke(t, rt, tt.src)
			if !tt.hit {
				require.NoError(t, err)
				return
			}
			var le *sandbox.LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, sandbox.LimitBoardBytes, le.Limit)
			assert.Equal(t, "n", le.Node)
			assert.ErrorIs(t, err, fault.BudgetExceeded)
			if tt.absent != "" {
				assert.NotContains(t, b.Vars, tt.absent)
			}
		})
	}
}

// The estimate starts from the board's size when the call starts.
func TestBoardBytesCountsTheStartingBoard(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{Limits: sandbox.Limits{MaxBoardBytes: 1 << 20}})
	b := agent.NewBoard()
	b.Vars["big"] = string(make([]byte, 900000))
	err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n",
		Script: sandbox.Script{Source: `board.setVar("more", "x".repeat(200000))`}}, b)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitBoardBytes, le.Limit)
	assert.NotContains(t, b.Vars, "more")
}

// A caller that measured the board passes its size
// (sandbox.Invocation.BoardBytes) and the count starts there instead of
// measuring the board: told that the board is nearly full, a small write
// passes max_board_bytes; told nothing, the same write fits.
func TestBoardBytesHintIsTheStartingCount(t *testing.T) {
	t.Parallel()
	const limit = 1000
	rt := mustNew(t, js.Options{Limits: sandbox.Limits{MaxBoardBytes: limit}})
	for _, hint := range []int64{0, limit - 10} {
		b := agent.NewBoard()
		err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", BoardBytes: hint,
			Script: sandbox.Script{Source: `board.setVar("a", "x".repeat(50))`}}, b)
		if hint == 0 {
			require.NoError(t, err, "the measured board has room")
			continue
		}
		var le *sandbox.LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, sandbox.LimitBoardBytes, le.Limit)
		assert.NotContains(t, b.Vars, "a")
	}
}

// Overwriting a var cannot lower the board's accounted size below what it
// holds: a write is charged with the measure a replace refunds, so the
// board never passes max_board_bytes ("<" is one byte to JSON.stringify
// and six as the board's JSON escapes it).
func TestBoardOverwritesCannotDriftPastTheLimit(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	rt, err := js.New(js.Options{Limits: sandbox.Limits{MaxBoardBytes: limit, MaxValueBytes: limit, WallTime: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	board := agent.NewBoard()
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `
		const lt = "<".repeat(100000), big = "x".repeat(300000);
		for (let i = 0; i < 20; i++) { board.setVar("a", lt); board.setVar("a", 0); }
		for (let i = 0; i < 30; i++) board.setVar("big" + i, big);`}}, board)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitBoardBytes, le.Limit)
	data, err := json.Marshal(board.Vars)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(data), limit)
}
