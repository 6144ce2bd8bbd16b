package sandboxtest

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shortWall keeps the wall-time cases quick.
func shortWall() sandbox.Limits { return sandbox.Limits{WallTime: 300 * time.Millisecond} }

// smallMemory gives the wall time room so that the memory limit is the one
// that stops the memory cases.
func smallMemory() sandbox.Limits {
	return sandbox.Limits{WallTime: time.Minute, MemoryBytes: 32 << 20}
}

func wallTime(t *testing.T, env *Env) {
	res := env.InvokeBounded(t, Call{Program: "loop", Node: "spin", Limits: shortWall()})
	RequireLimit(t, res.Err, sandbox.LimitWallTime, "spin")
	assert.Contains(t, res.Err.Error(), "spin")
	var le *sandbox.LimitError
	require.ErrorAs(t, res.Err, &le)
	assert.Equal(t, int64(shortWall().WallTime), le.Max, "the call's tighter limit applies")
}

func wallTimeCatch(t *testing.T, env *Env) {
	res := env.InvokeBounded(t, Call{Program: "loop_in_catch", Limits: shortWall()})
	RequireLimit(t, res.Err, sandbox.LimitWallTime, "node")
}

func cancelled(t *testing.T, env *Env) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	res := env.InvokeBounded(t, Call{Program: "loop", Ctx: ctx, Limits: sandbox.Limits{WallTime: time.Minute}})
	RequireKind(t, res.Err, fault.Aborted)
	assert.ErrorIs(t, res.Err, context.Canceled)
}

func stackDepth(t *testing.T, env *Env) {
	for _, prog := range []string{"recurse", "recurse_catch"} {
		res := env.InvokeBounded(t, Call{Program: prog, Limits: sandbox.Limits{StackDepth: 64, WallTime: time.Minute}})
		RequireLimit(t, res.Err, sandbox.LimitStack, "node")
	}
}

func memoryString(t *testing.T, env *Env) {
	res := env.InvokeBounded(t, Call{Program: "double_string", Limits: smallMemory()})
	RequireLimit(t, res.Err, sandbox.LimitMemory, "node")
}

func memoryObjects(t *testing.T, env *Env) {
	res := env.InvokeBounded(t, Call{Program: "grow_array", Limits: smallMemory()})
	RequireLimit(t, res.Err, sandbox.LimitMemory, "node")
}

func valueSizeBoard(t *testing.T, env *Env) {
	limits := sandbox.Limits{MaxValueBytes: 1024}
	ok := env.Invoke(t, Call{Program: "big_var", Config: map[string]any{"size": 100}, Limits: limits})
	require.NoError(t, ok.Err)
	res := env.Invoke(t, Call{Program: "big_var", Config: map[string]any{"size": 2048}, Limits: limits})
	RequireLimit(t, res.Err, sandbox.LimitValueBytes, "node")
	assert.NotContains(t, res.Board.Vars, "big")
}

func valueSizeABI(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "big_arg", Config: map[string]any{"size": 4096},
		Grants: []string{agent.CapEmit}, Limits: sandbox.Limits{MaxValueBytes: 1024}})
	RequireLimit(t, res.Err, sandbox.LimitValueBytes, "node")
	assert.Empty(t, events(res))
}

func eventLimit(t *testing.T, env *Env) {
	res := env.InvokeBounded(t, Call{Program: "event_flood", Grants: []string{agent.CapEmit},
		Limits: sandbox.Limits{MaxEvents: 5, WallTime: time.Minute}})
	RequireLimit(t, res.Err, sandbox.LimitEvents, "node")
	assert.Len(t, events(res), 5)
}

func nextCallUnharmed(t *testing.T, env *Env) {
	for _, c := range []Call{
		{Program: "loop", Limits: shortWall()},
		{Program: "recurse", Limits: sandbox.Limits{StackDepth: 64}},
		{Program: "double_string", Limits: smallMemory()},
	} {
		res := env.InvokeBounded(t, c)
		require.Error(t, res.Err, c.Program)
		next := env.Invoke(t, Call{Program: "board_vars", Board: seededBoard()})
		require.NoError(t, next.Err, "the call after %s", c.Program)
		assert.Equal(t, float64(42), Var(t, next, "seed_plus"))
	}
}

func seededBoard() *agent.Board {
	b := agent.NewBoard()
	b.Vars["seed"] = float64(41)
	return b
}
