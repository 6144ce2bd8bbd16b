package js

import (
	"context"
	"strconv"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

// realmUses is how many calls (scripts and expressions) one VM runs
// before it is replaced. What a VM gathers across calls that no call can
// read is bounded otherwise (the Symbol.for registry by
// maxSymbolKeyBytes, a script's functions by maxScriptFuncs): the count
// only renews VMs now and then, and a larger one spares the lock-down of
// a new VM (prepare: about 2 MB allocated, some milliseconds) and the
// garbage collection it makes.
const realmUses = 100_000

// maxSymbolKeyBytes bounds the registry of Symbol.for symbols of one VM,
// the only store of the engine that outlives a call and grows with what
// scripts do: the keys the VM's calls pass to Symbol.for are counted (each
// call, new key or not: an upper bound) and the VM is dropped after the
// call that passes this budget.
const maxSymbolKeyBytes = 1 << 20

// symbolEntryBytes is what one registry entry costs beyond its key.
const symbolEntryBytes = 64

// hiddenIntrinsicsSource lists the built-in objects that no chain of
// properties from the global object reaches (iterator and generator
// prototypes, the async function prototype, %ThrowTypeError%): they are
// frozen with the rest.
const hiddenIntrinsicsSource = `(function () {
	var P = Object.getPrototypeOf, out = [];
	function add(f) { try { var v = f(); if (v) { out.push(v) } } catch (e) {} }
	add(function () { return P([][Symbol.iterator]()) });
	add(function () { return P(P([][Symbol.iterator]())) });
	add(function () { return P(""[Symbol.iterator]()) });
	add(function () { return P(new Map()[Symbol.iterator]()) });
	add(function () { return P(new Set()[Symbol.iterator]()) });
	add(function () { return P(/a/[Symbol.matchAll]("a")) });
	add(function () { return P(function* () {}) });
	add(function () { return P(function* () {}).prototype });
	add(function () { return P(P(function* () {}).prototype) });
	add(function () { return P(async function () {}) });
	add(function () { return (function () { "use strict"; return Object.getOwnPropertyDescriptor(arguments, "callee").get })() });
	return out;
})()`

// overridable lists the properties of built-in prototypes that scripts
// commonly assign on objects of their own (err.name = ..., o.toString =
// ...); "*" is every property. Frozen as data properties, such an
// assignment would do nothing (or throw in strict code): each becomes an
// accessor whose getter returns the built-in and whose setter defines the
// property on the object assigned to. An assignment to the prototype
// itself does nothing.
var overridable = [...]struct {
	path  []string
	names []string
}{
	{[]string{"Object", "prototype"}, []string{"*"}},
	{[]string{"Function", "prototype"}, []string{"constructor", "toString"}},
	{[]string{"Array", "prototype"}, []string{"constructor", "toString"}},
	{[]string{"Promise", "prototype"}, []string{"constructor"}},
	{[]string{"Error", "prototype"}, []string{"constructor", "name", "message", "toString"}},
	{[]string{"EvalError", "prototype"}, []string{"constructor", "name", "message"}},
	{[]string{"RangeError", "prototype"}, []string{"constructor", "name", "message"}},
	{[]string{"ReferenceError", "prototype"}, []string{"constructor", "name", "message"}},
	{[]string{"SyntaxError", "prototype"}, []string{"constructor", "name", "message"}},
	{[]string{"TypeError", "prototype"}, []string{"constructor", "name", "message"}},
	{[]string{"URIError", "prototype"}, []string{"constructor", "name", "message"}},
}

// prepare builds a realm: a VM with the captured intrinsics, the guarded
// built-ins, UTC dates, the host's clock and random source, and every
// built-in object frozen (SES-style lockdown). Each call on it gets a new
// global object whose prototype is the frozen one (newGlobal).
func (r *Runtime) prepare() (*call, error) {
	vm := goja.New()
	c := &call{vm: vm, rt: r, cancel: noCancel, overrides: map[*goja.Object]goja.Value{}, watchAt: -1}
	c.in = captureIntrinsics(vm)
	vm.SetTimeSource(c.now)
	vm.SetRandSource(c.random)
	if ex := vm.Try(func() {
		c.installGuards()
		c.installUTCDates()
		c.template = vm.GlobalObject()
		c.installGlobalThis()
		roots := c.hiddenIntrinsics()
		c.enableOverrides()
		c.deepFreezeAll(append(roots, c.template)...)
	}); ex != nil {
		return nil, fault.Wrap(fault.Internal, ex, "prepare js vm", "")
	}
	return c, nil
}

func noCancel() {}

// now is the VM's clock: the host's, or an error in an expression.
func (c *call) now() time.Time {
	if c.abi == nil {
		panic(c.vm.NewTypeError("an expression has no clock: read the time from a board var"))
	}
	return c.hostNow()
}

// random is the VM's Math.random: the host's, or an error in an
// expression.
func (c *call) random() float64 {
	if c.abi == nil {
		panic(c.vm.NewTypeError("an expression has no random source"))
	}
	return c.hostRandom()
}

// hiddenIntrinsics returns the built-ins hiddenIntrinsicsSource lists.
func (c *call) hiddenIntrinsics() []*goja.Object {
	v, err := c.vm.RunProgram(c.rt.hidden)
	rethrow(err)
	arr, _ := v.(*goja.Object)
	var out []*goja.Object
	for i := int64(0); arr != nil && i < c.arrayLength(arr); i++ {
		if o, ok := arr.Get(strconv.FormatInt(i, 10)).(*goja.Object); ok {
			out = append(out, o)
		}
	}
	return out
}

// enableOverrides turns the overridable properties into accessors.
func (c *call) enableOverrides() {
	for _, o := range overridable {
		home := c.object(o.path...)
		if home == nil {
			continue
		}
		names := o.names
		if len(names) == 1 && names[0] == "*" {
			names = home.GetOwnPropertyNames()
		}
		for _, name := range names {
			c.enableOverride(home, name)
		}
	}
}

func (c *call) enableOverride(home *goja.Object, name string) {
	d, err := c.in.descriptor(goja.Undefined(), home, c.vm.ToValue(name))
	dobj, ok := d.(*goja.Object)
	if err != nil || !ok || dobj.Get("value") == nil || !dobj.Get("writable").ToBoolean() ||
		!dobj.Get("configurable").ToBoolean() {
		return
	}
	value := dobj.Get("value")
	getter := c.vm.ToValue(func(goja.FunctionCall) goja.Value { return value }).(*goja.Object)
	setter := c.vm.ToValue(func(fc goja.FunctionCall) goja.Value {
		this, ok := fc.This.(*goja.Object)
		if !ok || this == home {
			return goja.Undefined()
		}
		if own, err := c.in.descriptor(goja.Undefined(), this, c.vm.ToValue(name)); err == nil && !goja.IsUndefined(own) {
			_ = this.Set(name, fc.Argument(0))
			return goja.Undefined()
		}
		_ = this.DefineDataProperty(name, fc.Argument(0), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
		return goja.Undefined()
	})
	enumerable := goja.FLAG_FALSE
	if dobj.Get("enumerable").ToBoolean() {
		enumerable = goja.FLAG_TRUE
	}
	if home.DefineAccessorProperty(name, getter, setter, goja.FLAG_TRUE, enumerable) == nil {
		c.overrides[getter] = value
	}
}

// bind readies the VM for one invocation or evaluation: a new generation,
// the call's limits, node and deadline, and nothing left of the last call
// (release dropped its board, ABI and invocation). op is the prefix of
// the call's errors.
func (c *call) bind(parent context.Context, op, node string, limits sandbox.Limits) {
	c.bindOp(parent, opName{verb: op}, node, limits)
}

// bindOp is bind with the call's name in errors.
func (c *call) bindOp(parent context.Context, op opName, node string, limits sandbox.Limits) {
	c.vm.SetMaxCallStackSize(limits.StackDepth)
	// From the runtime's epoch, reading only the monotonic clock: half
	// the cost of time.Now, the same deadline. Two Adds, not a sum of the
	// durations, so that a huge wall time saturates rather than overflows.
	deadline := c.rt.epoch.Add(time.Since(c.rt.epoch)).Add(limits.WallTime)
	c.mu.Lock()
	c.gen++
	c.parent, c.deadline = parent, deadline
	c.op, c.node, c.limits = op, node, limits
	c.reason, c.ended = nil, false
	c.ctx, c.cancel = nil, noCancel
	c.stopped.Store(false)
	c.mu.Unlock()
	c.prefixLen = 0
	c.board = sandbox.BoardView{}
	clear(c.hostErrors)
	c.joining = c.joining[:0]
}

// newGlobal gives the call a new, empty global object whose prototype is
// the frozen one: whatever the call defines or assigns at the top level is
// gone with it.
func (c *call) newGlobal() *goja.Object {
	return c.ownGlobal(c.template)
}

// installGlobalThis makes globalThis an accessor of the frozen global
// object that reads the running call's own global object; assigning it
// defines the call's own globalThis, as assigning a writable global does.
func (c *call) installGlobalThis() {
	get := c.vm.ToValue(func(goja.FunctionCall) goja.Value { return c.vm.GlobalObject() })
	set := c.vm.ToValue(func(fc goja.FunctionCall) goja.Value {
		if this, ok := fc.This.(*goja.Object); ok && this != c.template {
			_ = this.DefineDataProperty("globalThis", fc.Argument(0), goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		}
		return goja.Undefined()
	})
	_ = c.template.DefineAccessorProperty("globalThis", get, set, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// fresh returns a realm no other call is using: a pooled one when one is
// ready, else a spare prepared ahead (spare.go), else one made now.
func (r *Runtime) fresh() (*call, error) {
	if c := r.realms.get(); c != nil {
		return c, nil
	}
	select {
	case c := <-r.spares:
		return c, nil
	default:
		return r.prepare()
	}
}

// finish ends c's call: the realm goes back to the pool (release) and
// the call leaves the runtime, freeing its slot if it holds one.
func (r *Runtime) finish(c *call) {
	held := c.slotHeld
	c.slotHeld = false
	r.release(c)
	r.leave(held)
}

// release ends c's call and returns the VM to the pool when it may run
// another: not after a stop (a limit, a signal, a cancel), an engine
// failure or code run by eval or Function (a global let, const or class it
// declared would outlive the global object), nor once its calls gave
// Symbol.for more than maxSymbolKeyBytes of keys, nor after realmUses
// calls.
func (r *Runtime) release(c *call) {
	c.uses++
	c.mu.Lock()
	c.ctx, c.parent = nil, nil
	c.mu.Unlock()
	c.board, c.abi, c.parallel, c.nodeType = sandbox.BoardView{}, nil, nil, ""
	if c.runInfo != (sandbox.RunInfo{}) {
		c.runInfo = sandbox.RunInfo{}
	}
	clear(c.hostErrors)
	if len(c.varKeys) > 0 {
		clear(c.varKeys)
		c.varKeys = c.varKeys[:0]
	}
	c.vm.SetGlobalObject(c.template)
	switch {
	case c.stopped.Load() || c.ranCode || c.broken || c.symbolKeyBytes > maxSymbolKeyBytes:
		r.wantSpare()
		return
	case c.uses >= realmUses:
		return // its replacement was asked for at half its calls
	case c.uses == realmUses/2:
		r.wantSpare()
	}
	r.realms.put(c)
}

// guardSymbolRegistry counts what Symbol.for may add to the VM's registry
// (maxSymbolKeyBytes).
func (c *call) guardSymbolRegistry() {
	sym := c.object("Symbol")
	if sym == nil {
		return
	}
	c.wrap(sym, "for", func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		key := c.toStr(fc.Argument(0))
		c.symbolKeyBytes += int64(key.Length())*bytesPerChar + symbolEntryBytes
		return callOrig(orig, fc.This, key)
	})
}

// deepFreezeAll freezes every object reachable from roots through own
// properties (values, getters and setters) and prototypes.
func (c *call) deepFreezeAll(roots ...*goja.Object) {
	seen := map[*goja.Object]bool{}
	queue := roots
	for len(queue) > 0 {
		o := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if o == nil || seen[o] {
			continue
		}
		seen[o] = true
		keys := make([]goja.Value, 0, 16)
		for _, k := range o.GetOwnPropertyNames() {
			keys = append(keys, c.vm.ToValue(k))
		}
		for _, s := range o.Symbols() {
			keys = append(keys, s)
		}
		for _, k := range keys {
			d, err := c.in.descriptor(goja.Undefined(), o, k)
			if err != nil {
				continue
			}
			if dobj, ok := d.(*goja.Object); ok {
				for _, part := range []string{"value", "get", "set"} {
					if v, ok := dobj.Get(part).(*goja.Object); ok {
						queue = append(queue, v)
					}
				}
			}
		}
		queue = append(queue, o.Prototype())
		c.freeze(o)
	}
}
