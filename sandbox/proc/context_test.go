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

// stuck is an ABI whose calls wait for their context to end; entered
// gets a value as each call starts.
type stuck struct{ entered chan struct{} }

func (s stuck) Functions() []string { return []string{"now"} }
func (s stuck) Call(ctx context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
	s.entered <- struct{}{}
	<-ctx.Done()
	return nil, fault.FromContext(ctx.Err(), "host "+name)
}

// REF 9.M11
// A script waiting in a host call is stopped by its caller's cancel:
// the worker's wait ends with the cancel, or with the host call's answer,
// whichever comes first (an answer that comes after is dropped), and the
// worker serves the next call.
func TestCancelDuringHostCall(t *testing.T) {
	rt, err := proc.New(proc.Options{Worker: "js", MaxWorkers: 1, Spares: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	_, _, err = invoke(context.Background(), rt, "t", "warm", `board.setVar("x", 1)`)
	require.NoError(t, err)
	pid := rt.Workers()[0].Pid
	for i := range 20 {
		abi := stuck{entered: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := rt.Invoke(ctx, sandbox.Invocation{Node: "n", Type: "script",
				Script: sandbox.Script{Name: "n", Source: `host.now(); board.setVar("after", true)`},
				Board:  *agent.NewBoard(), ABI: abi, Run: sandbox.RunInfo{RunID: "r", Tenant: "t"}})
			done <- err
		}()
		<-abi.entered
		cancel()
		err = <-done
		require.Error(t, err, "round %d", i)
		assert.ErrorIs(t, err, fault.Aborted, "round %d: the caller's cancel: %v", i, err)
		b, _, err := invoke(context.Background(), rt, "t", "next", `board.setVar("ok", 1)`)
		require.NoError(t, err, "round %d", i)
		assert.Equal(t, 1.0, b.Vars["ok"], "round %d", i)
	}
	assert.Equal(t, pid, rt.Workers()[0].Pid, "the worker stopped the calls itself and stays")
}
