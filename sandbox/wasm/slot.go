package wasm

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

// acquire admits one call and takes a slot for it; leave must follow,
// told whether the call still holds its slot.
func (r *Runtime) acquire(ctx context.Context, op string) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fault.New(fault.NotAvailable, op, "runtime closed")
	}
	r.calls.Add(1)
	r.mu.Unlock()
	if err := r.slots.Take(ctx); err != nil {
		r.calls.Done()
		if errors.Is(err, sandbox.ErrSlotsClosed) {
			return fault.New(fault.NotAvailable, op, "runtime closed")
		}
		return fault.Wrap(fault.NotAvailable, fault.FromContext(err, op), op,
			"no free slot in a pool of %d", r.slots.Size())
	}
	return nil
}

// leave ends a call acquire admitted, freeing its slot when it holds one.
func (r *Runtime) leave(held bool) {
	if held {
		r.slots.Leave()
	}
	r.calls.Done()
}

// callBlocking makes a host call that may wait for as long as it takes
// (hostabi.Func.Blocking) without the call's slot, so that other calls,
// the one it waits for among them, can run; it takes a slot again before
// the guest continues. The wall time keeps counting meanwhile. A cancel,
// the wall time or the runtime's close while it waits for the slot stops
// the call. A call without a slot (none was taken for it) just calls.
func (st *callState) callBlocking(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if !st.slotHeld {
		return st.inv.ABI.Call(ctx, name, args)
	}
	st.rt.slots.Leave()
	st.slotHeld = false
	res, err := st.inv.ABI.Call(ctx, name, args)
	if serr := st.rt.slots.Take(ctx); serr != nil {
		switch {
		case errors.Is(serr, sandbox.ErrSlotsClosed) || st.rt.closeCtx.Err() != nil:
			st.halt(fault.New(fault.Aborted, st.op, "runtime closed"))
		case st.parent != nil && st.parent.Err() != nil:
			st.halt(fault.FromContext(st.parent.Err(), st.op))
		}
		st.halt(st.limitError(sandbox.LimitWallTime))
	}
	st.slotHeld = true
	return res, err
}
