package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/require"
)

// Overwriting a var cannot lower the board's accounted size below what it
// holds: a write is charged with the measure a replace refunds, so the
// board never passes max_board_bytes, whatever a guest writes ("<" is one
// byte as the guest sends it and six as JSON escapes it).
func TestBoardOverwritesCannotDriftPastTheLimit(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	st := &callState{inv: sandbox.Invocation{Node: "n", Board: *agent.NewBoard()},
		limits: sandbox.Limits{MaxBoardBytes: limit, MaxValueBytes: limit}.WithDefaults()}
	st.board.Reset(st.inv.Board, 0) // as Invoke starts it
	set := func(name, v string) error {
		_, err := boardSetVar(context.Background(), st, []byte(`["`+name+`",`+v+`]`))
		return err
	}
	lt := `"` + strings.Repeat("<", 100_000) + `"`
	for i := range 20 {
		require.NoError(t, set("a", lt), i)
		require.NoError(t, set("a", `0`), i)
	}
	big := `"` + strings.Repeat("x", 300_000) + `"`
	var err error
	for i := 0; err == nil && i < 30; i++ {
		err = set(fmt.Sprint("big", i), big)
	}
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, sandbox.LimitBoardBytes, le.Limit)
	data, jerr := json.Marshal(st.board.Vars())
	require.NoError(t, jerr)
	require.LessOrEqual(t, len(data), limit)
}

// A call starts counting the board from the size its invocation gives
// (sandbox.Invocation.BoardBytes) instead of measuring the board: told
// that the board is nearly full, a small write passes max_board_bytes.
func TestBoardBytesHintIsTheStartingCount(t *testing.T) {
	t.Parallel()
	const limit = 1000
	for _, hint := range []int64{0, limit - 10} {
		st := &callState{inv: sandbox.Invocation{Node: "n", Board: *agent.NewBoard(), BoardBytes: hint},
			limits: sandbox.Limits{MaxBoardBytes: limit, MaxValueBytes: limit}.WithDefaults()}
		st.board.Reset(st.inv.Board, hint) // as Invoke starts it
		_, err := boardSetVar(context.Background(), st, []byte(`["a","`+strings.Repeat("x", 50)+`"]`))
		if hint == 0 {
			require.NoError(t, err, "the measured board has room")
			continue
		}
		var le *sandbox.LimitError
		require.ErrorAs(t, err, &le)
		require.Equal(t, sandbox.LimitBoardBytes, le.Limit)
	}
}
