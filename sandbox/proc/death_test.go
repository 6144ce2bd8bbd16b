package proc_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// invoke runs src as node in tenant on rt.
func invoke(ctx context.Context, rt sandbox.Runtime, tenant, node, src string) (*agent.Board, sandbox.Outcome, error) {
	b := agent.NewBoard()
	out, err := rt.Invoke(ctx, sandbox.Invocation{Node: node, Type: "script", Script: sandbox.Script{Name: node, Source: src},
		Board: *b, Run: sandbox.RunInfo{RunID: "r", Tenant: tenant}})
	out.Writes.Apply(b)
	return b, out, err
}

// requireHealthy checks that a call on tenant succeeds after a death, on a
// worker other than dead.
func requireHealthy(t *testing.T, rt *proc.Runtime, tenant string, dead int) {
	t.Helper()
	b, out, err := invoke(context.Background(), rt, tenant, "after", `board.setVar("ok", 40 + 2)`)
	require.NoError(t, err)
	assert.Equal(t, 42.0, b.Vars["ok"])
	assert.Greater(t, out.CPU, time.Duration(0), "the worker reports its CPU time")
	for _, w := range rt.Workers() {
		assert.NotEqual(t, dead, w.Pid, "the dead worker is gone")
	}
}

// busyWorker waits until tenant has a worker running a call, and returns
// its pid.
func busyWorker(t *testing.T, rt *proc.Runtime, tenant string, done <-chan struct{}) int {
	t.Helper()
	for {
		for _, w := range rt.Workers() {
			if w.Tenant == tenant && !w.Idle {
				return w.Pid
			}
		}
		select {
		case <-done:
			t.Fatal("the call ended before its worker was seen")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// A worker killed from outside (SIGKILL) mid-call fails that call only,
// with Internal naming the node and the tenant; the next call runs on a
// replacement.
func TestWorkerKilledMidCall(t *testing.T) {
	rt := newProcessJS(t, "")
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, _, err = invoke(context.Background(), rt, "acme", "spin", `for (;;) {}`)
	}()
	pid := busyWorker(t, rt, "acme", done)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	<-done
	require.Error(t, err)
	assert.True(t, fault.Is(err, fault.Internal), "kind: %v", err)
	assert.False(t, fault.Is(err, fault.BudgetExceeded) || fault.Is(err, fault.Timeout), "not a limit: %v", err)
	assert.Contains(t, err.Error(), `node "spin"`)
	assert.Contains(t, err.Error(), `tenant "acme"`)
	requireHealthy(t, rt, "acme", pid)
}

// A script that grows past the worker's kernel memory cap (the
// in-process memory guard set far above it) kills its worker; the call
// fails with a memory_bytes LimitError (BudgetExceeded) naming the node
// and the tenant, and the next call runs on a replacement.
func TestWorkerMemoryCap(t *testing.T) {
	for name, src := range bombs {
		t.Run(name, func(t *testing.T) {
			rt := newProcessJS(t, fmt.Sprintf(`, "host_memory_bytes": -1, "limits": {"wall_time": "2m", "memory_bytes": %d}`, int64(64)<<30))
			_, _, err := invoke(context.Background(), rt, "acme", "bomb", src)
			var le *sandbox.LimitError
			require.True(t, errors.As(err, &le), "a LimitError: %v", err)
			assert.Equal(t, sandbox.LimitMemory, le.Limit)
			assert.Equal(t, "bomb", le.Node)
			assert.True(t, fault.Is(err, fault.BudgetExceeded))
			assert.Contains(t, err.Error(), `tenant "acme"`)
			assert.Contains(t, err.Error(), "memory cap", "the kernel cap stopped it, not the in-process guard")
			requireHealthy(t, rt, "acme", 0)
		})
	}
}

// With the in-process host ceiling on (the default), a worker derives it
// from the GOMEMLIMIT it sets under its kernel cap and stops a bomb
// itself, before the kernel would kill it; the worker lives on and serves
// the next call.
func TestWorkerCeilingStopsBombs(t *testing.T) {
	for name, src := range bombs {
		t.Run(name, func(t *testing.T) {
			rt := newProcessJS(t, fmt.Sprintf(`, "limits": {"wall_time": "2m", "memory_bytes": %d}`, int64(64)<<30))
			_, _, err := invoke(context.Background(), rt, "acme", "bomb", src)
			var le *sandbox.LimitError
			require.True(t, errors.As(err, &le), "a LimitError: %v", err)
			assert.Equal(t, sandbox.LimitMemory, le.Limit)
			assert.True(t, fault.Is(err, fault.BudgetExceeded))
			_, _, err = invoke(context.Background(), rt, "acme", "after", `board.setVar("ok", 1)`)
			require.NoError(t, err, "the call after the bomb")
		})
	}
}

// bombs are scripts that allocate without end.
var bombs = map[string]string{
	"string": `let s = 'x'; for (;;) s += s`,
	"array":  `const a = []; for (let i = 0; ; i++) a.push({i, s: 'item ' + i})`,
	"map":    `const m = new Map(); for (let i = 0; ; i++) m.set('k' + i, [i, i + 1, i + 2])`,
}

// newCrashy is a runtime whose workers are the crashy test runner.
func newCrashy(t *testing.T, limits sandbox.Limits) *proc.Runtime {
	t.Helper()
	rt, err := proc.New(proc.Options{Worker: crashyWorker, Limits: limits, MaxWorkers: 2, MemoryBytes: workerMemory()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	return rt
}

// A Go fatal error or a Go stack overflow in a worker fails only its call,
// with Internal naming the cause; the next call runs on a replacement.
func TestWorkerGoFatal(t *testing.T) {
	for name, c := range map[string]struct{ src, cause string }{
		"fatal error":    {"//go-fatal", "fatal error: sync: unlock of unlocked mutex"},
		"stack overflow": {"//go-stack-overflow", "goroutine stack exceeds"},
	} {
		t.Run(name, func(t *testing.T) {
			rt := newCrashy(t, sandbox.Limits{WallTime: 2 * time.Minute})
			_, _, err := invoke(context.Background(), rt, "acme", "crash", c.src)
			require.Error(t, err)
			assert.True(t, fault.Is(err, fault.Internal), "kind: %v", err)
			assert.False(t, fault.Is(err, fault.BudgetExceeded), "not memory: %v", err)
			assert.Contains(t, err.Error(), c.cause)
			assert.Contains(t, err.Error(), `tenant "acme"`)
			requireHealthy(t, rt, "acme", 0)
		})
	}
}

// Deep recursion in a script is the runner's stack_depth limit: the
// worker survives it and runs the next call.
func TestDeepRecursionKeepsWorker(t *testing.T) {
	rt := newProcessJS(t, "")
	_, _, err := invoke(context.Background(), rt, "acme", "deep", `function f(n) { return f(n + 1) + 1 } f(0)`)
	var le *sandbox.LimitError
	require.True(t, errors.As(err, &le), "a LimitError: %v", err)
	assert.Equal(t, sandbox.LimitStack, le.Limit)
	ws := rt.Workers()
	require.NotEmpty(t, ws)
	requireHealthy(t, rt, "acme", 0)
}

// A worker that overruns the wall time without stopping is killed by the
// parent: the call fails with a wall_time LimitError (Timeout), and the
// next call runs on a replacement. A cancelled call on a worker deaf to
// its context fails with Aborted, its worker killed too.
func TestWorkerOverrunKilled(t *testing.T) {
	rt := newCrashy(t, sandbox.Limits{WallTime: 100 * time.Millisecond})
	_, _, err := invoke(context.Background(), rt, "acme", "hang", "//go-hang")
	var le *sandbox.LimitError
	require.True(t, errors.As(err, &le), "a LimitError: %v", err)
	assert.Equal(t, sandbox.LimitWallTime, le.Limit)
	assert.True(t, fault.Is(err, fault.Timeout))
	requireHealthy(t, rt, "acme", 0)

	// The same on a worker whose earlier calls had a longer wall time.
	rt = newCrashy(t, sandbox.Limits{WallTime: time.Minute})
	_, _, err = invoke(context.Background(), rt, "acme", "warm", `board.setVar("x", 1)`)
	require.NoError(t, err)
	_, err = rt.Invoke(context.Background(), sandbox.Invocation{Node: "hang", Type: "script",
		Script: sandbox.Script{Name: "hang", Source: "//go-hang"}, Board: *agent.NewBoard(),
		Run: sandbox.RunInfo{RunID: "r", Tenant: "acme"}, Limits: sandbox.Limits{WallTime: 100 * time.Millisecond}})
	require.True(t, errors.As(err, &le), "a LimitError: %v", err)
	assert.Equal(t, sandbox.LimitWallTime, le.Limit)
	requireHealthy(t, rt, "acme", 0)

	rt = newCrashy(t, sandbox.Limits{WallTime: 2 * time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, err = invoke(ctx, rt, "acme", "hang", "//go-hang")
	}()
	busyWorker(t, rt, "acme", done)
	cancel()
	<-done
	assert.True(t, fault.Is(err, fault.Aborted), "kind: %v", err)
	assert.True(t, errors.Is(err, context.Canceled))
	requireHealthy(t, rt, "acme", 0)
}

// REF 9.M12
// A worker that sends a malformed frame is killed, and only its call
// fails, with Internal naming the node, the tenant and the worker; the
// next call runs on a replacement.
func TestMalformedFrameKillsWorker(t *testing.T) {
	rt := newCrashy(t, sandbox.Limits{WallTime: time.Minute})
	_, _, err := invoke(context.Background(), rt, "acme", "garble", "//go-garble")
	require.Error(t, err)
	assert.True(t, fault.Is(err, fault.Internal), "kind: %v", err)
	assert.ErrorContains(t, err, `node "garble"`)
	assert.ErrorContains(t, err, `tenant "acme"`)
	assert.ErrorContains(t, err, "malformed")
	requireHealthy(t, rt, "acme", 0)
}

// REF 9.M18
// A worker that sends a result whose values would cost the parent far
// more heap than the call may hold, or a var's value past
// max_value_bytes, fails its call with Internal naming the node, the
// tenant and the worker, costs the parent about the frame's bytes, and
// is replaced: the next call succeeds.
func TestResultPastItsBudgetKillsWorker(t *testing.T) {
	for name, src := range map[string]string{
		"decoding budget": "//go-bloat",
		"max_value_bytes": "//go-long-value 4096",
	} {
		t.Run(name, func(t *testing.T) {
			rt := newCrashy(t, sandbox.Limits{WallTime: 5 * time.Second, MemoryBytes: 8 << 20, MaxValueBytes: 4 << 10})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, err := invoke(context.Background(), rt, "acme", "bloat", src)
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			assert.True(t, fault.Is(err, fault.Internal), "kind: %v", err)
			assert.ErrorContains(t, err, `node "bloat"`)
			assert.ErrorContains(t, err, `tenant "acme"`)
			assert.ErrorContains(t, err, "worker ")
			assert.ErrorContains(t, err, "malformed")
			assert.ErrorContains(t, err, name)
			grew := after.TotalAlloc - before.TotalAlloc
			assert.Less(t, grew, uint64(40<<20), "the parent allocated %d bytes for a frame of 24 MiB at most", grew)
			requireHealthy(t, rt, "acme", 0)
		})
	}
}

// The parallel callback crosses: parallel.cancelNode in the worker calls
// the caller's Parallel and returns its answer.
func TestParallelCrosses(t *testing.T) {
	rt := newProcessJS(t, "")
	var got []string
	b := agent.NewBoard()
	out, err := rt.Invoke(context.Background(), sandbox.Invocation{Node: "p", Script: sandbox.Script{
		Source: `board.setVar("cancelled", parallel.cancelNode("sibling", "enough"))`}, Board: *b,
		Parallel: func(node, reason string) bool { got = append(got, node, reason); return true }})
	require.NoError(t, err)
	out.Writes.Apply(b)
	assert.Equal(t, true, b.Vars["cancelled"])
	assert.Equal(t, []string{"sibling", "enough"}, got)
}

// Close stops every worker and waits; it is idempotent, and a call after
// it fails with NotAvailable.
func TestCloseStopsWorkers(t *testing.T) {
	rt := newProcessJS(t, "")
	_, _, err := invoke(context.Background(), rt, "a", "n", `board.setVar("x", 1)`)
	require.NoError(t, err)
	_, _, err = invoke(context.Background(), rt, "b", "n", `board.setVar("x", 1)`)
	require.NoError(t, err)
	pids := rt.Workers()
	require.NotEmpty(t, pids)
	require.NoError(t, rt.Close())
	require.NoError(t, rt.Close())
	assert.Empty(t, rt.Workers())
	for _, w := range pids {
		assert.ErrorIs(t, syscall.Kill(w.Pid, 0), syscall.ESRCH, "worker %d is gone", w.Pid)
	}
	_, _, err = invoke(context.Background(), rt, "a", "n", `1`)
	assert.True(t, fault.Is(err, fault.NotAvailable), "kind: %v", err)
}

// A runtime leaves no goroutine behind: after calls in several tenants,
// a death and Close, the goroutines it started have ended.
func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	rt, err := proc.New(proc.Options{Worker: crashyWorker, Limits: sandbox.Limits{WallTime: time.Minute}, MemoryBytes: workerMemory()})
	require.NoError(t, err)
	for _, tenant := range []string{"a", "b", "c"} {
		_, _, err := invoke(context.Background(), rt, tenant, "n", `board.setVar("x", 1)`)
		require.NoError(t, err)
	}
	_, _, err = invoke(context.Background(), rt, "a", "crash", "//go-fatal")
	require.Error(t, err)
	require.NoError(t, rt.Close())
	for n := 0; runtime.NumGoroutine() > before; n++ { // timers' goroutines end on their own
		require.Less(t, n, 6000, "goroutines left: %d, before: %d", runtime.NumGoroutine(), before)
		time.Sleep(10 * time.Millisecond)
	}
}
