package js

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/require"
)

// spinOn runs a script that loops for ever on rt, under ctx and wall,
// and returns its error; it fails t if the call is not stopped within a
// minute (a stop that never comes).
func spinOn(t *testing.T, ctx context.Context, rt *Runtime, wall time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "spin", Script: sandbox.Script{Source: `for (;;) {}`},
			Limits: sandbox.Limits{WallTime: wall}}, agent.NewBoard())
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("the spinning call was never stopped")
		return nil
	}
}

// A cancel, the caller's deadline and the wall time stop a call on the
// event (context.AfterFunc, a timer), not at a tick of the watchdog: with
// the watchdog's goroutine gone, each still stops a spinning call, with
// its error; and a stop aimed at one call never reaches the next on the
// same VM.
func TestStopsComeOnTheEventNotTheWatchdog(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	rt.watchdog.shutdown() // no more ticks

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	require.ErrorIs(t, spinOn(t, ctx, rt, time.Minute), fault.Aborted, "cancel")

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, spinOn(t, ctx, rt, time.Minute), fault.Timeout, "the caller's deadline")

	err = spinOn(t, context.Background(), rt, 20*time.Millisecond)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le, "wall time")
	require.Equal(t, sandbox.LimitWallTime, le.Limit)

	// Calls on one context, one VM: the context's registration is kept
	// across them, and its end stops only the call that runs then.
	run, end := context.WithCancel(context.Background())
	for range 3 {
		require.NoError(t, sandbox.InvokeOn(run, rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `board.setVar("x", 1)`}}, agent.NewBoard()))
	}
	time.AfterFunc(20*time.Millisecond, end)
	require.ErrorIs(t, spinOn(t, run, rt, time.Minute), fault.Aborted)
	require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `board.setVar("x", 1)`}}, agent.NewBoard()), "the next call, on another context")
}

// A late wall-time timer or context callback, aimed at a call that has
// ended, does not stop the next call on the VM.
func TestLateStopsMissTheNextCall(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `1`}}, agent.NewBoard()))
	c := rt.realms.get("")
	require.NotNil(t, c)
	c.bindOp(context.Background(), opName{verb: "invoke"}, "next", rt.limits)
	c.wallTimeUp() // fires for the earlier call: the deadline is ahead
	cancel()       // the earlier call's context ends
	c.parentDone() // as the registration would, late
	require.False(t, c.stopped.Load(), "a late stop reached the next call")
	c.endReason()
	rt.release(c)
}
