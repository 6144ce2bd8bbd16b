package js

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js/internal/bigop"
	"github.com/dop251/goja"
)

// call is one VM, a realm whose built-ins are frozen (see realm.go), and
// the state of the Invoke or Eval it is running. A VM runs one call at a
// time and many calls in its life: bind resets the per-call state and
// starts a new generation, so that a late stop aimed at an earlier call
// (a watchdog tick racing its end) never reaches the next one. Everything
// but stop runs on the goroutine that called Invoke or Eval.
type call struct {
	vm *goja.Runtime
	rt *Runtime
	in intrinsics

	// The realm: the frozen global object every call's global inherits
	// from, the script API objects (made at the first Invoke) and how
	// many calls the VM has run.
	template *goja.Object
	apis     *apis
	uses     int
	// funcs are the functions of the scripts the VM ran (scriptFunc).
	funcs map[*compiled]goja.Callable
	// guards are the spread guards (spreadGuard, arraySpreadGuard) and the
	// BigInt helper (bigop.Global), which every global object of the VM
	// holds.
	guards [3]goja.Value
	// scripts are the node scripts the VM ran, by where their strings are
	// (realmFor): found without the runtime's cache and its lock.
	scripts map[sourceIdentity]vmScript
	// configs are the static configs the VM made, by the map's address
	// (configValue).
	configs map[uintptr]*staticConfig
	// overrides maps the getter of each overridable built-in property
	// (realm.go) to the property's value.
	overrides map[*goja.Object]goja.Value

	// The call: set by bind and installGlobals, read by the API functions.
	parent   context.Context
	deadline time.Time
	node     string
	op       opName // invoke node "x": the prefix of the call's errors
	limits   sandbox.Limits
	// nodeType, runInfo and parallel are the invocation's Type, Run and
	// Parallel: only what the API functions read is kept, so that binding
	// and releasing a call writes few pointers.
	nodeType string
	runInfo  sandbox.RunInfo
	parallel func(nodeID, reason string) bool
	// board is the invocation's board under the call's writes.
	board sandbox.BoardView
	abi   sandbox.ABI // nil in an expression: no host, no clock
	// prefixLen is how many columns the script wrapper adds to line 1.
	prefixLen int
	// ranCode is set once eval or the Function constructor has run code in
	// the global scope: a let, const or class it declared stays in the VM,
	// beyond the global object, so the VM must not run another call.
	ranCode bool
	// bigOK is set while the call's program may make BigInts
	// (compiled.bigint, guard.go's bigSource).
	bigOK bool
	// broken is set when the script engine failed: the VM is not reused.
	broken bool
	// symbolKeyBytes counts the keys the VM's calls gave Symbol.for: past
	// maxSymbolKeyBytes the VM is not reused.
	symbolKeyBytes int64
	// slotHeld is whether the call holds its pool slot: it gives it up
	// during a blocking host call. Only the call's goroutine touches it.
	slotHeld bool

	stopped atomic.Bool
	mu      sync.Mutex
	gen     uint64             // the call's generation; guarded by mu
	reason  error              // why the call stopped; a doneSignal for signal.done
	ended   bool               // the script returned; later stops are ignored
	ctx     context.Context    // the host calls' context, made at the first one
	cancel  context.CancelFunc // cancels ctx; never nil after bind

	hostErrors map[*goja.Object]error // errors thrown into the script by host calls
	varKeys    []string               // defineVars' scratch, empty between calls
	joining    []*goja.Object         // arrays being joined, outermost first
	// nativeDepth counts the native functions running inside one
	// another (enterNative): a built-in that calls a built-in through a
	// getter or a method recurses on the Go stack with no frame of the
	// VM's to count it.
	nativeDepth int
	// natives are the functions c.native made, which count themselves.
	natives map[*goja.Object]bool

	// mem is the memory guard of the call being watched; only the
	// watchdog's looks touch it (under watchdog.looking).
	mem memoryGuard
	// wallTimer fires at or before the running call's deadline
	// (wallTimeUp), at wallAt (zero when it is not armed); made at the
	// VM's first call and left armed between calls: a call whose deadline
	// is no earlier than wallAt leaves it alone, and a timer that fires
	// before the running call's deadline is set again for the rest, one
	// that fires between calls does nothing. Setting a timer at each
	// call added it to the Go runtime's timers each time, which, while
	// no thread of the process waits on the poller (a worker process
	// running its call), wakes another thread: a wakeup a call. Stopped
	// when the VM is dropped (unwatchParent). onParentDone is parentDone as a
	// func value, made once; it is registered with the caller's context
	// (context.AfterFunc), whose Done channel is afterDone, and stopAfter
	// unregisters it. The registration outlives the call: the next call
	// of the VM with the same context (a run's nodes share one) keeps it,
	// and it ends when that context ends (parentDone), when a call comes
	// with another, or when the VM is dropped (unwatchParent). Guarded by
	// mu.
	wallTimer    *time.Timer
	wallAt       time.Time
	onParentDone func()
	afterDone    <-chan struct{}
	stopAfter    func() bool
	// tenant is the tenant of the calls the VM ran ("" before its
	// first): a pooled VM serves one tenant only (realmPool.get).
	tenant string
	// watchAt is the call's index among the watchdog's calls, -1 when it
	// is not watched; guarded by the watchdog's lock.
	watchAt int
}

// doneSignal is the stop reason of signal.done: the call succeeded.
type doneSignal struct{}

func (doneSignal) Error() string { return "done" }

// stopMark is the value the VM is interrupted with; the reason is in call.
type stopMark struct{}

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
	c.nativeDepth = 0
}

// stop ends the call with reason (the first reason wins): the VM stops at
// its next instruction and every guarded built-in refuses to continue. It
// is safe to call from any goroutine.
func (c *call) stop(reason error) {
	c.mu.Lock()
	c.stopLocked(reason)
}

// stopGen stops the call of generation gen, if the VM still runs it, with
// the error reason makes (under the call's lock, so that it reads the
// fields of that call). It is safe to call from any goroutine.
func (c *call) stopGen(gen uint64, reason func() error) {
	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		return
	}
	c.stopLocked(reason())
}

// stopLocked stops the call; c.mu is held and is released.
func (c *call) stopLocked(reason error) {
	if c.ended {
		c.mu.Unlock()
		return
	}
	if c.reason == nil {
		c.reason = reason
	}
	c.stopped.Store(true)
	c.vm.Interrupt(stopMark{})
	cancel := c.cancel
	c.mu.Unlock()
	cancel()
}

// hostCtx is the context of the call's host calls: the caller's, bounded
// by the wall time, cancelled when the call stops. It is made at the first
// host call, so that a call that makes none does not pay for it.
func (c *call) hostCtx() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.reason != nil {
			c.cancel()
		}
	}
	return c.ctx
}

// endReason marks the script as returned, so that a stop that comes later
// (a wall-time tick racing the end) is ignored, and returns why the call
// stopped, or nil.
func (c *call) endReason() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	return c.reason
}

// abort stops the call with reason and unwinds the Go function the VM is
// running. It must be called on the VM's goroutine, from a function the VM
// called. The script cannot catch it: the VM is interrupted before any of
// the script's catch or finally blocks run.
func (c *call) abort(reason error) {
	c.stop(reason)
	panic(c.vm.NewTypeError("stopped"))
}

// checkStop aborts when the call has been stopped; guarded built-ins that
// loop in Go call it so that a stop reaches them.
func (c *call) checkStop() {
	if c.stopped.Load() {
		panic(c.vm.NewTypeError("stopped"))
	}
}

// enterNative is the entry of every native function a script can reach
// (c.native, the guards' wrap, countNatives): it stops a stopped call,
// since a native function that calls another through a getter or a method
// runs no instruction of the VM, where an interrupt would land, and it
// counts how deep native functions run inside one another, which no
// frame of the VM's counts: Error.prototype.toString as the getter of an
// object's own name, or Object.prototype.toLocaleString as its toString,
// recurse in Go alone until the Go stack overflows and ends the process.
// Past maxNesting the call stops with stack_depth. leaveNative undoes it.
func (c *call) enterNative() {
	c.checkStop()
	c.nativeDepth++
	if c.nativeDepth > c.maxNesting() {
		c.abort(c.limitError(sandbox.LimitStack))
	}
}

func (c *call) leaveNative() { c.nativeDepth-- }

// limitError returns the *sandbox.LimitError of limit for this call.
func (c *call) limitError(limit string) *sandbox.LimitError {
	e := &sandbox.LimitError{Limit: limit, Node: c.node}
	switch limit {
	case sandbox.LimitWallTime:
		e.Max = int64(c.limits.WallTime)
	case sandbox.LimitMemory:
		e.Max = c.limits.MemoryBytes
	case sandbox.LimitStack:
		e.Max = int64(c.limits.StackDepth)
	case sandbox.LimitValueBytes:
		e.Max = c.limits.MaxValueBytes
	case sandbox.LimitEvents:
		e.Max = int64(c.limits.MaxEvents)
	case sandbox.LimitEventBytes:
		e.Max = c.limits.MaxEventBytes
	case sandbox.LimitLogBytes:
		e.Max = c.limits.MaxLogBytes
	case sandbox.LimitBoardBytes:
		e.Max = c.limits.MaxBoardBytes
	}
	return e
}

var proxyType = reflect.TypeOf(goja.Proxy{})

func (c *call) runtimeClosed() error {
	return fault.New(fault.Aborted, c.op.String(), "runtime closed")
}

// contextStop classifies the end of the caller's context: Aborted for a
// cancel, Timeout for the caller's own deadline.
func (c *call) contextStop(err error) error {
	return fault.FromContext(err, c.op.String())
}

// result maps how the script ended to the call's error: nil for a normal
// end or signal.done; the stop reason (a signal, a limit, a cancel); a
// *sandbox.LimitError for a stack overflow; the host's error for an
// uncaught host exception; a *sandbox.ScriptError for any other uncaught
// exception. It ends the call: a later stop is ignored.
func (c *call) result(err error) error {
	if reason := c.endReason(); reason != nil {
		if _, ok := reason.(doneSignal); ok {
			return nil
		}
		return reason
	}
	if err == nil {
		return nil
	}
	// A type switch, not errors.As: unwrapping a *goja.Exception asks
	// whether the thrown value is an instance of GoError, which runs the
	// getPrototypeOf trap of a thrown proxy — after the call ended, where
	// no stop reaches it (a trap that loops hung the caller for ever). No
	// Exception is wrapped into the error returned either, so no caller's
	// errors.Is can run one.
	switch e := err.(type) {
	case *goja.StackOverflowError:
		return c.limitError(sandbox.LimitStack)
	case *goja.Exception:
		return c.exceptionError(e)
	}
	c.broken = true
	return fault.Wrap(fault.Internal, err, c.op.String(), "")
}

func (c *call) exceptionError(ex *goja.Exception) error {
	val := ex.Value()
	if obj, ok := val.(*goja.Object); ok {
		if herr, ok := c.hostErrors[obj]; ok {
			err := fmt.Errorf("%s: %w", c.op.String(), herr)
			for _, f := range ex.Stack() {
				if where := c.position(f); where != "" {
					return &sandbox.HostCallError{Where: where, Err: err}
				}
			}
			return err
		}
	}
	se := &sandbox.ScriptError{Node: c.node, Kind: fault.Internal, Message: clip(unaddressed(c.safeMessage(val)), maxMessageLen)}
	if f, ok := throwFrame(ex.Stack()); ok {
		se.Where = c.position(f)
	}
	return se
}

// throwFrame is the frame an exception names: the first, past the frames
// of the helper that rewritten operators call (package bigop) and the
// native functions it calls, so that an error the helper throws names the
// operator's line in the script, as the operator did.
func throwFrame(frames []goja.StackFrame) (goja.StackFrame, bool) {
	helper := false
	for _, f := range frames {
		switch name := f.SrcName(); {
		case name == bigop.File:
			helper = true
		case helper && f.Position().Line == 0:
			// add, Reflect.apply: natives between the helper and its caller
		default:
			return f, true
		}
	}
	return goja.StackFrame{}, false
}

// maxMessageLen bounds the message of a thrown value kept in an error.
const maxMessageLen = 1024

// clip cuts s to at most n bytes, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// position formats a stack frame, undoing the shift the script wrapper
// puts on the first line.
func (c *call) position(f goja.StackFrame) string {
	p := f.Position()
	if p.Line == 0 || p.Filename == bigop.File {
		return ""
	}
	if p.Line == 1 && c.prefixLen > 0 {
		p.Column = max(1, p.Column-c.prefixLen)
	}
	return fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column)
}

// safeMessage describes a thrown value without running script code: it
// reads own data properties only (no getters, no toString, no proxies).
func (c *call) safeMessage(val goja.Value) string {
	obj, ok := val.(*goja.Object)
	if !ok {
		if val == nil {
			return "undefined"
		}
		return val.String()
	}
	// each cut first: a name and a message may each be as long as the
	// call's budget allows, and only maxMessageLen bytes are kept
	name := clip(c.dataString(obj, "name"), maxMessageLen)
	msg := clip(c.dataString(obj, "message"), maxMessageLen)
	switch {
	case name == "" && msg == "":
		return "a thrown " + obj.ClassName()
	case name == "":
		return msg
	case msg == "":
		return name
	}
	return name + ": " + msg
}

// dataString returns the string value of the data property key on obj or
// its prototypes, without calling getters or proxy traps.
func (c *call) dataString(obj *goja.Object, key string) string {
	for depth := 0; obj != nil && depth < 32; depth++ {
		if obj.ExportType() == proxyType {
			return ""
		}
		desc, err := c.in.descriptor(goja.Undefined(), obj, c.vm.ToValue(key))
		if err != nil {
			return ""
		}
		if d, ok := desc.(*goja.Object); ok {
			v := d.Get("value")
			if g, ok := d.Get("get").(*goja.Object); ok {
				v = c.overrides[g] // an overridable built-in's value
			}
			if s, ok := v.(goja.String); ok {
				return s.String()
			}
			return ""
		}
		obj = obj.Prototype()
	}
	return ""
}

// throw raises err in the script as a catchable Error whose code is the
// error's kind ("policy_denied") and whose message is err's text. A
// *sandbox.LimitError, or any error after the call was stopped, stops the
// call instead. An uncaught thrown error ends the call with err itself.
func (c *call) throw(err error) {
	var le *sandbox.LimitError
	if errors.As(err, &le) {
		c.abort(err)
	}
	c.checkStop()
	obj, cerr := c.vm.New(c.in.errorCtor, c.vm.ToValue(err.Error()))
	if cerr != nil {
		panic(cerr)
	}
	_ = obj.Set("code", fault.KindOr(err, fault.Internal).String())
	_ = obj.DefineDataProperty("stack", c.vm.ToValue(scriptStack(obj.Get("stack").String())), goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	if c.hostErrors == nil {
		c.hostErrors = make(map[*goja.Object]error)
	}
	c.hostErrors[obj] = err
	panic(obj)
}

// rethrow re-raises an error returned by a goja.Callable inside the VM: a
// script exception stays catchable, an interrupt or stack overflow stays
// uncatchable.
func rethrow(err error) {
	if err != nil {
		panic(err)
	}
}
