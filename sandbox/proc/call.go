package proc

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

// cancelGrace is how long a worker has to end a call after the parent
// asked it to stop (the caller's context ended) before it is killed.
const cancelGrace = 2 * time.Second

// overrunGrace is how long past a call's wall time the parent waits for
// the worker's own wall-time stop before it kills the worker: the worker
// stops the call itself, the parent only when the worker cannot.
func overrunGrace(wall time.Duration) time.Duration {
	return max(2*time.Second, wall/2)
}

// conversation is one call on one worker, as the parent holds it: it
// answers the worker's host calls and parallel calls until the result
// comes, and watches the caller's context, the wall time and the
// worker's death meanwhile.
type conversation struct {
	op, node string
	abi      sandbox.ABI
	parallel func(nodeID, reason string) bool
	wall     time.Duration
}

// hold sends the call and waits for its result. An error is the call's
// failure on the parent's side (the worker died, was killed, or broke the
// protocol); the worker is then dead and reaped.
func (c *conversation) hold(ctx context.Context, w *worker, t frameType, msg any, closing <-chan struct{}) (resultMsg, error) {
	if err := w.send(t, msg); err != nil {
		if errors.Is(err, errTooLarge) {
			return resultMsg{}, fault.Wrap(fault.BudgetExceeded, err, c.op, "the call does not fit in a message")
		}
		return resultMsg{}, c.fail(w, nil)
	}
	deadline := time.Now().Add(c.wall + overrunGrace(c.wall))
	overrun := time.NewTimer(time.Until(deadline))
	defer overrun.Stop()
	done := ctx.Done()
	var grace <-chan time.Time
	for {
		select {
		case f, ok := <-w.frames:
			if !ok {
				return resultMsg{}, c.fail(w, closing)
			}
			res, end, err := c.answer(ctx, w, f, deadline)
			if err != nil {
				w.kill()
				<-w.exited
				return resultMsg{}, fault.Wrap(fault.Internal, err, c.op, "tenant %q: worker %d", w.tenant, w.pid)
			}
			if end {
				return res, nil
			}
		case <-done:
			done = nil
			_ = w.send(frameCancel, &cancelMsg{ID: w.nextID})
			t := time.NewTimer(cancelGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			w.kill()
			<-w.exited
			return resultMsg{}, fault.FromContext(ctx.Err(), c.op)
		case <-overrun.C:
			w.kill()
			<-w.exited
			return resultMsg{}, &sandbox.LimitError{Limit: sandbox.LimitWallTime, Node: c.node, Max: int64(c.wall)}
		case <-closing:
			w.kill()
			<-w.exited
			return resultMsg{}, fault.New(fault.Aborted, c.op, "tenant %q: the runtime is closing", w.tenant)
		}
	}
}

// fail is the error of a call whose worker stopped under it.
func (c *conversation) fail(w *worker, closing <-chan struct{}) error {
	w.kill()
	<-w.exited
	select {
	case <-closing:
		return fault.New(fault.Aborted, c.op, "tenant %q: the runtime is closing", w.tenant)
	default:
	}
	return w.deathError(c.op, c.node)
}

// answer handles one frame of the worker: the result ends the call; a
// host or parallel call is run here, on the caller's ABI, and answered.
func (c *conversation) answer(ctx context.Context, w *worker, f frame, deadline time.Time) (resultMsg, bool, error) {
	switch f.typ {
	case frameResult:
		var res resultMsg
		if err := decode(f, frameResult, &res); err != nil {
			return resultMsg{}, false, err
		}
		if res.ID != w.nextID {
			return resultMsg{}, false, errors.New("result of another call")
		}
		return res, true, nil
	case frameHost:
		var m hostMsg
		if err := decode(f, frameHost, &m); err != nil {
			return resultMsg{}, false, err
		}
		reply := hostReplyMsg{Seq: m.Seq}
		if c.abi == nil {
			reply.Err = encodeError(fault.New(fault.NotAvailable, "host "+m.Name, "this call has no host functions"))
		} else {
			hctx, cancel := context.WithDeadline(ctx, deadline)
			res, err := c.abi.Call(hctx, m.Name, m.Args)
			cancel()
			if err == nil && !json.Valid(res) {
				err = fault.New(fault.Internal, "host "+m.Name, "the host function returned invalid JSON")
			}
			if err != nil {
				res = nil
			}
			reply.Result, reply.Err = res, encodeError(err)
		}
		return resultMsg{}, false, w.send(frameHostReply, &reply)
	case frameParallel:
		var m parallelMsg
		if err := decode(f, frameParallel, &m); err != nil {
			return resultMsg{}, false, err
		}
		ok := c.parallel != nil && c.parallel(m.Node, m.Reason)
		return resultMsg{}, false, w.send(frameParallelReply, &parallelReplyMsg{Seq: m.Seq, OK: ok})
	}
	return resultMsg{}, false, errors.New("unexpected frame from the worker")
}
