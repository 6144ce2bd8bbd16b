package js

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

// noABI is the ABI of a call that has none: no functions.
type noABI struct{}

func (noABI) Functions() []string { return nil }

func (noABI) Call(_ context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, fault.New(fault.NotAvailable, "host "+name, "this call has no host functions")
}

// hostFunc calls the host function name with the script's arguments as a
// JSON array and returns the JSON result as a fresh value. A host error is
// thrown as an Error with code and message; a limit stops the call.
func (c *call) hostFunc(name string) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		res := c.callHost(name, fc.Arguments)
		if len(res) == 0 {
			return goja.Undefined()
		}
		return c.fromJSON(res)
	}
}

func (c *call) callHost(name string, argv []goja.Value) json.RawMessage {
	c.checkStop()
	args := json.RawMessage("[]")
	if len(argv) > 0 {
		args = c.toJSON(c.vm.NewArray(toAny(argv)...), c.limits.MaxValueBytes, sandbox.LimitValueBytes)
	}
	var res json.RawMessage
	var err error
	if c.rt.blocking[name] {
		res, err = c.callBlocking(name, args)
	} else {
		res, err = c.abi.Call(c.hostCtx(), name, args)
	}
	if err != nil {
		c.throw(err)
	}
	c.checkStop()
	if int64(len(res)) > c.limits.MaxValueBytes {
		c.abort(c.limitError(sandbox.LimitValueBytes))
	}
	return res
}

// callBlocking makes a host call that may wait for as long as it takes
// (hostabi.Func.Blocking) without the call's slot, so that other calls,
// the one it waits for among them, can run; it takes a slot again before
// the script continues. The wall time keeps counting meanwhile. A stop, a
// cancel or the wall time while it waits for the slot stops the call.
func (c *call) callBlocking(name string, args json.RawMessage) (json.RawMessage, error) {
	ctx := c.hostCtx()
	if !c.slotHeld {
		return c.abi.Call(ctx, name, args)
	}
	c.rt.slots.Leave()
	c.slotHeld = false
	res, err := c.abi.Call(ctx, name, args)
	if serr := c.rt.slots.Take(ctx); serr != nil {
		c.checkStop()
		if errors.Is(serr, sandbox.ErrSlotsClosed) {
			c.abort(c.runtimeClosed())
		}
		c.mu.Lock()
		parent := c.parent
		c.mu.Unlock()
		if perr := parent.Err(); perr != nil {
			c.abort(c.contextStop(perr))
		}
		c.abort(c.limitError(sandbox.LimitWallTime))
	}
	c.slotHeld = true
	return res, err
}

// hostNow is the VM's clock: host.now, decoded. It accepts an RFC 3339
// string, a number of Unix milliseconds, or an object holding either.
func (c *call) hostNow() time.Time {
	res := c.callHost("now", nil)
	if t, ok := decodeNow(res); ok {
		return t
	}
	c.throw(fault.New(fault.Internal, "host now", "node %q: unexpected clock value %.64s", c.node, res))
	return time.Time{}
}

func decodeNow(res json.RawMessage) (time.Time, bool) {
	var v any
	if json.Unmarshal(res, &v) != nil {
		return time.Time{}, false
	}
	switch t := v.(type) {
	case string:
		tm, err := time.Parse(time.RFC3339Nano, t)
		return tm.UTC(), err == nil
	case float64:
		return time.UnixMilli(int64(t)).UTC(), true
	case map[string]any:
		for _, k := range []string{"unix_ms", "unix_milli", "ms"} {
			if f, ok := t[k].(float64); ok {
				return time.UnixMilli(int64(f)).UTC(), true
			}
		}
		for _, k := range []string{"rfc3339", "time", "iso"} {
			if s, ok := t[k].(string); ok {
				tm, err := time.Parse(time.RFC3339Nano, s)
				return tm.UTC(), err == nil
			}
		}
	}
	return time.Time{}, false
}

// hostRandom is the VM's Math.random: host.random, a number in [0, 1).
func (c *call) hostRandom() float64 {
	res := c.callHost("random", nil)
	var f float64
	if json.Unmarshal(res, &f) != nil || f < 0 || f >= 1 || math.IsNaN(f) {
		c.throw(fault.New(fault.Internal, "host random", "node %q: unexpected random value %.64s", c.node, res))
	}
	return f
}
