package sandboxtest

import (
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func boardVars(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "board_vars", Board: seededBoard()})
	require.NoError(t, res.Err)
	assert.Equal(t, float64(1), Var(t, res, "n"))
	assert.Equal(t, map[string]any{"a": []any{float64(1), "two", nil}, "b": true}, Var(t, res, "obj"))
	assert.NotContains(t, res.Board.Vars, "gone")
	assert.Equal(t, []any{true, false, true}, Var(t, res, "has"))
	assert.Equal(t, float64(42), Var(t, res, "seed_plus"))
	assert.Equal(t, []any{"has", "n", "obj", "seed", "seed_plus"}, Var(t, res, "keys"))
	assert.Equal(t, true, Var(t, res, "missing"))
}

func boardCopies(t *testing.T, env *Env) {
	b := agent.NewBoard()
	b.Vars["obj"] = map[string]any{"a": "original"}
	res := env.Invoke(t, Call{Program: "board_copy", Board: b})
	require.NoError(t, res.Err)
	assert.Equal(t, "original", Var(t, res, "unchanged"))
	assert.Equal(t, map[string]any{"a": "written"}, Var(t, res, "obj"))
}

func boardChannels(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "board_channels"})
	require.NoError(t, res.Err)
	assert.Equal(t, float64(0), Var(t, res, "empty"))
	assert.Equal(t, agent.MainChannel, Var(t, res, "main"))
	assert.Equal(t, []any{"a", "b"}, Var(t, res, "side_texts"))
	side := res.Board.Channel("side")
	require.Len(t, side, 2)
	assert.Equal(t, "b", side[1].Text())
	main := res.Board.Channel(agent.MainChannel)
	require.Len(t, main, 1)
	assert.Equal(t, "c", main[0].Text())
}

func boardInvalid(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "board_invalid_messages"})
	require.NoError(t, res.Err)
	codes, ok := Var(t, res, "codes").([]any)
	require.True(t, ok)
	assert.Len(t, codes, 6, "every invalid write throws")
	for _, c := range codes {
		assert.Equal(t, fault.Validation.String(), c)
	}
	assert.Equal(t, float64(0), Var(t, res, "side"), "an invalid write writes nothing, not even its valid messages")
}

func boardReserved(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "board_reserved"})
	require.NoError(t, res.Err)
	assert.Equal(t, []any{"validation", "validation"}, Var(t, res, "codes"))
	assert.NotContains(t, res.Board.Vars, "__iterations")
}

func boardResolve(t *testing.T, env *Env) {
	b := agent.NewBoard()
	b.Vars["obj"] = map[string]any{"n": float64(5)}
	res := env.Invoke(t, Call{Program: "board_resolve", Board: b})
	require.NoError(t, res.Err)
	assert.Equal(t, float64(5), Var(t, res, "typed"))
	assert.Equal(t, "n=5", Var(t, res, "str"))
	assert.Equal(t, float64(42), Var(t, res, "def"))
	assert.Equal(t, fault.Validation.String(), Var(t, res, "code"))
}

func invocationGlobals(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "globals", Node: "n7", Config: map[string]any{"greeting": "hello"}})
	require.NoError(t, res.Err)
	assert.Equal(t, []any{RunID, "task-1", "agent", "ctx-1", ""}, Var(t, res, "run"))
	assert.Equal(t, []any{"n7", "script"}, Var(t, res, "node"))
	assert.Equal(t, "hello", Var(t, res, "config"))
	assert.Equal(t, "hello", Var(t, res, "config_after"))
	assert.Equal(t, true, Var(t, res, "frozen"))
	assert.Equal(t, false, Var(t, res, "cancel"))
	var asked []string
	wave := env.Invoke(t, Call{Program: "globals", Config: map[string]any{"greeting": "x"},
		Parallel: func(id, reason string) bool { asked = append(asked, id+":"+reason); return true }})
	require.NoError(t, wave.Err)
	assert.Equal(t, true, Var(t, wave, "cancel"))
	assert.Equal(t, []string{"other:because"}, asked)

	// A static config (one map, unchanged, at every call of a node) may be
	// kept by the runtime, but each map is its own: a call with another
	// static map sees that one.
	first, second := map[string]any{"greeting": "first"}, map[string]any{"greeting": "second"}
	for _, want := range []string{"first", "first", "second", "first", "second"} {
		cfg := first
		if want == "second" {
			cfg = second
		}
		res := env.Invoke(t, Call{Program: "globals", Node: "n7", Config: cfg, StaticConfig: true})
		require.NoError(t, res.Err)
		assert.Equal(t, want, Var(t, res, "config"))
		assert.Equal(t, true, Var(t, res, "frozen"))
	}
}

// boardWritesMeasured runs the board programs with and without the
// board's size handed in: the call's writes, applied to the board as the
// graph engine applies them, count the board's size exactly, whatever the
// runtime knew of it.
func boardWritesMeasured(t *testing.T, env *Env) {
	boards := map[string]func() *agent.Board{
		"board_vars": seededBoard, "board_channels": agent.NewBoard, "board_copy": func() *agent.Board {
			b := agent.NewBoard()
			b.Vars["obj"] = map[string]any{"a": "original <&>"}
			b.Vars["\u2028 odd \"name\""] = []any{1.5, -0.25, 1e21, "x"}
			return b
		},
	}
	for program, board := range boards {
		for _, handed := range []bool{false, true} {
			b := board()
			c := Call{Program: program, Board: b}
			if handed {
				n, err := sandbox.BoardJSONBytes(b)
				require.NoError(t, err)
				c.BoardBytes = n
			}
			res := env.Invoke(t, c)
			require.NoError(t, res.Err)
			require.NotEmpty(t, res.Outcome.Writes, "%s writes the board", program)
			want, err := sandbox.BoardJSONBytes(res.Board)
			require.NoError(t, err)
			assert.Equal(t, want, res.BoardBytes, "%s, size handed in: %v", program, handed)
		}
	}
}
