package proc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
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
	op, node string // "invoke" or "eval", and the node's id
	abi      sandbox.ABI
	parallel func(nodeID, reason string) bool
	// limits are the call's, as its worker applies them: the wall time,
	// and what decoding its result may cost (budget.go).
	limits sandbox.Limits
}

// opName names the call in its errors (made only for an error).
func (c *conversation) opName() string { return fmt.Sprintf("%s node %q", c.op, c.node) }

// Why a call's worker was killed under it.
const (
	killedNot int32 = iota
	killedOverrun
	killedCancel
)

// hold sends the call and reads the worker's frames until its result.
// Meanwhile the caller's context (a cancel frame, then a kill after
// cancelGrace) and the wall time (a kill after overrunGrace, by the
// worker's overrunWatch) are watched, and a kill ends the read. An error is the call's failure on
// the parent's side (the worker died, was killed, or broke the protocol);
// the worker is then dead and reaped.
func (c *conversation) hold(ctx context.Context, w *worker, t frameType, msg any, closing <-chan struct{}) (resultMsg, error) {
	if err := w.send(t, msg); err != nil {
		if errors.Is(err, errTooLarge) {
			w.sent = nil // the worker did not get it: the next invoke carries its context
			return resultMsg{}, fault.Wrap(fault.BudgetExceeded, err, c.opName(), "the call does not fit in a message")
		}
		return resultMsg{}, c.fail(w, closing)
	}
	wall := c.limits.WallTime
	deadline := time.Now().Add(wall + overrunGrace(wall))
	k := &killer{w: w}
	defer k.finish()
	w.overrun.start(k, deadline)
	k.stopCtx = context.AfterFunc(ctx, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if !k.done {
			_ = w.cancel(w.nextID)
			k.grace = time.AfterFunc(cancelGrace, func() { k.kill(killedCancel) })
		}
	})
	for {
		f, err := readFrame(w.r, w.max)
		if err != nil {
			// Its output ends (EOF) when it exits, or is closed
			// (ErrClosed) once it has been reaped.
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) && w.alive() {
				w.kill() // it does not speak the protocol
				<-w.exited
				return resultMsg{}, fault.Wrap(fault.Internal, err, c.opName(), "tenant %q: worker %d", w.tenant, w.pid)
			}
			switch k.reason() {
			case killedOverrun:
				<-w.exited
				return resultMsg{}, &sandbox.LimitError{Limit: sandbox.LimitWallTime, Node: c.node, Max: int64(wall)}
			case killedCancel:
				<-w.exited
				return resultMsg{}, fault.FromContext(ctx.Err(), c.opName())
			}
			return resultMsg{}, c.fail(w, closing)
		}
		res, end, err := c.answer(ctx, w, f, deadline)
		if err != nil {
			w.kill()
			<-w.exited
			return resultMsg{}, fault.Wrap(fault.Internal, err, c.opName(), "tenant %q: worker %d", w.tenant, w.pid)
		}
		if end {
			return res, nil
		}
	}
}

// killer kills a call's worker when its timers fire, and never after the
// call has ended (finish).
type killer struct {
	w       *worker
	stopCtx func() bool

	mu    sync.Mutex
	done  bool
	why   int32
	grace *time.Timer
}

func (k *killer) kill(why int32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done || k.why != killedNot {
		return
	}
	k.why = why
	k.w.kill()
}

func (k *killer) reason() int32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.why
}

// finish stops the timers; no kill comes after it.
func (k *killer) finish() {
	k.mu.Lock()
	k.done = true
	if k.grace != nil {
		k.grace.Stop()
	}
	k.mu.Unlock()
	k.w.overrun.end(k)
	k.stopCtx()
}

// fail is the error of a call whose worker stopped under it.
func (c *conversation) fail(w *worker, closing <-chan struct{}) error {
	w.kill()
	<-w.exited
	select {
	case <-closing:
		return fault.New(fault.Aborted, c.opName(), "tenant %q: the runtime is closing", w.tenant)
	default:
	}
	return w.deathError(c.opName(), c.node)
}

// answer handles one frame of the worker: the result ends the call; a
// host or parallel call is run here, on the caller's ABI, and answered.
func (c *conversation) answer(ctx context.Context, w *worker, f frame, deadline time.Time) (resultMsg, bool, error) {
	switch f.typ {
	case frameResult:
		var res resultMsg
		if err := decodeIn(f, frameResult, &res, newBudget(c.limits, w.memory)); err != nil {
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
