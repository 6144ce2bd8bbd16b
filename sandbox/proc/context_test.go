package proc_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// names is an ABI that binds the given host functions and answers none.
type names []string

func (n names) Functions() []string { return n }
func (n names) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`null`), nil
}

// One worker running calls of different runs, with different host
// functions and limits, gives each call its own: a call that repeats the
// previous call's context is sent without it, and one that does not
// is sent whole, and so is the call after one too large to send.
func TestWorkerSeesEachCallsContext(t *testing.T) {
	rt, err := proc.New(proc.Options{Worker: "js", MaxWorkers: 1, Spares: -1, MaxFrameBytes: 64 << 10})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	const src = `board.setVar("run", run.get_run_id()); board.setVar("emit", typeof host.emit);
		function f(n) { return n ? 1 + f(n - 1) : 0 }
		board.setVar("deep", f(100))`
	for i, c := range []struct {
		run   string
		abi   sandbox.ABI
		depth int
		emit  string
		err   bool
		big   bool // too large to send: the worker never sees it
	}{
		{run: "a", abi: names{"emit"}, emit: "function"},
		{run: "a", abi: names{"emit"}, emit: "function"},
		{run: "b", abi: names{"emit"}, emit: "function"},
		{run: "b", abi: names{"log"}, emit: "undefined"},
		{run: "b", abi: names{"log"}, depth: 50, err: true},
		{run: "b", abi: names{"log"}, emit: "undefined"},
		{run: "c", abi: names{"emit"}, big: true},
		{run: "c", abi: names{"emit"}, emit: "function"},
	} {
		b := agent.NewBoard()
		if c.big {
			b.Vars["pad"] = strings.Repeat("x", 100<<10)
		}
		out, err := rt.Invoke(context.Background(), sandbox.Invocation{Node: "n", Type: "script",
			Script: sandbox.Script{Name: "n", Source: src}, Board: *b, ABI: c.abi,
			Run: sandbox.RunInfo{RunID: c.run, Tenant: "t"}, Limits: sandbox.Limits{StackDepth: c.depth}})
		if c.big {
			require.ErrorIs(t, err, fault.BudgetExceeded, "call %d", i)
			continue
		}
		if c.err {
			var le *sandbox.LimitError
			require.ErrorAs(t, err, &le, "call %d", i)
			assert.Equal(t, sandbox.LimitStack, le.Limit, "call %d", i)
			continue
		}
		require.NoError(t, err, "call %d", i)
		out.Writes.Apply(b)
		assert.Equal(t, c.run, b.Vars["run"], "call %d", i)
		assert.Equal(t, c.emit, b.Vars["emit"], "call %d", i)
	}
	assert.Len(t, rt.Workers(), 1, "every call ran on the one worker")
}
