package js_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
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

// A call returns the writes its script made before it failed, in order,
// and leaves the board it was handed as it was: the caller decides what
// to keep.
func TestOutcomeHoldsWritesBeforeAFailure(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	base := agent.NewBoard()
	base.Vars["keep"] = "me"
	out, err := rt.Invoke(context.Background(), sandbox.Invocation{Node: "n", Board: *base,
		Script: sandbox.Script{Source: `board.setVar("a", 1); board.deleteVar("keep"); board.appendChannel("c", {role: "user", parts: [{type: "text", text: "hi"}]}); throw new Error("boom")`}})
	require.Error(t, err)
	require.Len(t, out.Writes, 3)
	assert.Equal(t, []sandbox.WriteOp{sandbox.SetVar, sandbox.DeleteVar, sandbox.AppendChannel},
		[]sandbox.WriteOp{out.Writes[0].Op, out.Writes[1].Op, out.Writes[2].Op})
	assert.Equal(t, map[string]any{"keep": "me"}, base.Vars, "the board handed in is not written")
	out.Writes.Apply(base)
	assert.Equal(t, map[string]any{"a": 1.0}, base.Vars)
	assert.Len(t, base.Channel("c"), 1)
}
