package js_test

import (
	"testing"
	"time"

	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/require"
)

func newRuntime(t *testing.T) sandbox.Runtime {
	t.Helper()
	// A long wall time: the memory cases must hit their memory limit
	// first even under the race detector.
	rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// The js runtime passes the sandbox conformance suite: the script
// globals, signals and the board API, the canonical steer node (an idle
// round appends nothing), capabilities through the host ABI, the limits.
// REF 5.4
// REF 9.3
// REF 9.4
// REF 9.8
// REF 9.9
func TestConformance(t *testing.T) {
	sandboxtest.Run(t, newRuntime)
}

// The js runtime declares exact board sizes and reports the board's size
// after a call, whether or not it was handed the size before: the graph
// engine then need not measure the board after a script node's wave.
func TestReportsBoardSize(t *testing.T) {
	t.Parallel()
	env := &sandboxtest.Env{Runtime: newRuntime(t), Programs: sandboxtest.ProgramsFor("js")}
	require.True(t, sandbox.ReportsExactBoardBytes(env.Runtime))
	require.False(t, sandbox.ReportsExactBoardBytes(struct{ sandbox.Runtime }{env.Runtime}), "a wrapper does not inherit the declaration")
	res := env.Invoke(t, sandboxtest.Call{Program: "board_channels"})
	require.NoError(t, res.Err)
	want, err := sandbox.BoardJSONBytes(res.Board)
	require.NoError(t, err)
	require.Equal(t, want, res.BoardBytesAfter)
}
