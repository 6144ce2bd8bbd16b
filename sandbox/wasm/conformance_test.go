package wasm_test

import (
	"testing"
	"time"

	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/corral-rt/corral/sandbox/wasm"
	"github.com/stretchr/testify/require"
)

func newRuntime(t *testing.T) sandbox.Runtime {
	t.Helper()
	rt, err := wasm.New(wasm.Options{Limits: sandbox.Limits{WallTime: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// The wasm runtime passes the sandbox conformance suite unchanged, with
// the Go port of its programs (testdata/wasm/suite); its Eval is not
// available, which the eval cases check as the contract says.
// REF 5.4
// REF 9.3
// REF 9.4
// REF 9.M5 (host.publish confined to the run's own namespace)
// REF 9.8
// REF 9.9
func TestConformance(t *testing.T) {
	progs := sandboxtest.WasmPrograms(guests.Build(t, suiteGuest))
	sandboxtest.RunPrograms(t, newRuntime, progs)
}

// The wasm runtime declares exact board sizes and reports the board's size
// after a call, whether or not it was handed the size before: the graph
// engine then need not measure the board after a script node's wave.
func TestReportsBoardSize(t *testing.T) {
	t.Parallel()
	env := &sandboxtest.Env{Runtime: newRuntime(t), Programs: sandboxtest.WasmPrograms(guests.Build(t, suiteGuest))}
	require.True(t, sandbox.ReportsExactBoardBytes(env.Runtime))
	require.False(t, sandbox.ReportsExactBoardBytes(struct{ sandbox.Runtime }{env.Runtime}), "a wrapper does not inherit the declaration")
	res := env.Invoke(t, sandboxtest.Call{Program: "board_channels"})
	require.NoError(t, res.Err)
	want, err := sandbox.BoardJSONBytes(res.Board)
	require.NoError(t, err)
	require.Equal(t, want, res.BoardBytesAfter)
}
