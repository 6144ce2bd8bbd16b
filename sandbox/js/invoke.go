package js

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

// Invoke runs one node script in a realm no other call is using, with a
// global object of its own; see sandbox.Runtime for the errors. The script
// is the body of a function run with the globals in scope
// (docs/sandbox.md).
func (r *Runtime) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	op := opName{r, "invoke", inv.Node}
	if err := ctx.Err(); err != nil {
		return sandbox.Outcome{}, fault.FromContext(err, op.String())
	}
	if inv.Script.Source == "" && len(inv.Script.Module) > 0 {
		return sandbox.Outcome{}, fault.New(fault.Validation, op.String(), "the js runtime runs JavaScript source, not a WebAssembly module")
	}
	limits, err := r.callLimits(inv.Limits, op, inv.Node)
	if err != nil {
		return sandbox.Outcome{}, err
	}
	name := scriptName(inv)
	key := cacheKey(keyScript, name, inv.Script.Source)
	c, comp, err := r.realmFor(ctx, op, inv.Run.Tenant, key, func() (*compiled, error) {
		return compileScript(name, inv.Script.Source)
	})
	if err != nil {
		return sandbox.Outcome{}, err
	}
	defer r.finish(c)
	c.bindOp(ctx, op, inv.Node, limits)
	c.prefixLen = len(scriptPrefix)
	err = c.run(len(inv.CallConfig()) > 0, func() {
		c.installGlobals(inv, comp.sharedGlobal)
	}, func() error {
		f, err := c.scriptFunc(comp)
		if err != nil {
			return err
		}
		_, err = f(goja.Undefined())
		return err
	})
	return sandbox.Outcome{Writes: c.board.Writes()}, err
}

// realmFor takes a slot and a realm for a call of the script of key and
// returns them with the script's program (the realm serves tenant only): the one the realm ran before
// (found by where the key's strings are, without a lock), else the
// runtime's cached one, else one compiled with compile, with no slot held
// meanwhile (a long script takes a while). When no slot is free at once,
// or the runtime is closed, the program is found or compiled first, so
// that a script that does not compile fails at once, as at any time. The
// realm holds the slot (slotHeld) until finish.
func (r *Runtime) realmFor(ctx context.Context, op opName, tenant string, key programKey, compile func() (*compiled, error)) (*call, *compiled, error) {
	id := identityOf(key)
	var made *compiled // found or compiled with no slot held
	if !r.tryAcquire() {
		var err error
		if made, err = r.programs.get(key, compile); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", op.String(), err)
		}
		if err := r.acquire(ctx, op); err != nil {
			return nil, nil, err
		}
	}
	for {
		c, err := r.fresh(tenant)
		if err != nil {
			r.leave(true)
			return nil, nil, fmt.Errorf("%s: %w", op.String(), err)
		}
		c.slotHeld = true
		if e, ok := c.scripts[id]; ok {
			return c, e.comp, nil
		}
		comp := made
		if comp == nil {
			comp = r.programs.peek(key)
		}
		if comp != nil {
			c.rememberScript(id, key, comp)
			return c, comp, nil
		}
		r.finish(c)
		if made, err = r.programs.get(key, compile); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", op.String(), err)
		}
		if err := r.acquire(ctx, op); err != nil {
			return nil, nil, err
		}
	}
}

// maxScriptFuncs bounds the script functions, and the scripts found by
// where their strings are, a VM keeps.
const maxScriptFuncs = 256

// vmScript is a script a VM ran, found by where its name and source are
// (sourceIdentity): it keeps the strings, so that no other string takes
// their place while it is kept.
type vmScript struct {
	name, source string
	comp         *compiled
}

// rememberScript keeps comp as the program of the script of key in c.
func (c *call) rememberScript(id sourceIdentity, key programKey, comp *compiled) {
	if c.scripts == nil || len(c.scripts) >= maxScriptFuncs {
		c.scripts = map[sourceIdentity]vmScript{}
	}
	c.scripts[id] = vmScript{name: key.name, source: key.source, comp: comp}
}

// scriptFunc returns the function a compiled script makes in this VM,
// made at its first call and kept for the next ones. It is frozen, with
// its prototype object: a script reaches its own function
// (arguments.callee) and must not leave anything on it.
func (c *call) scriptFunc(comp *compiled) (goja.Callable, error) {
	c.bigOK = comp.bigint
	if f, ok := c.funcs[comp]; ok {
		return f, nil
	}
	v, err := c.vm.RunProgram(comp.prog)
	if err != nil {
		return nil, err
	}
	f, ok := goja.AssertFunction(v)
	if !ok {
		return nil, fault.New(fault.Validation, c.op.String(), "the script is not a function body")
	}
	obj := v.(*goja.Object)
	if p, ok := obj.Get("prototype").(*goja.Object); ok {
		c.freeze(p)
	}
	c.freeze(obj)
	if c.funcs == nil || len(c.funcs) >= maxScriptFuncs {
		c.funcs = map[*compiled]goja.Callable{}
	}
	c.funcs[comp] = f
	return f, nil
}

func scriptName(inv sandbox.Invocation) string {
	switch {
	case inv.Script.Name != "":
		return inv.Script.Name
	case inv.Node != "":
		return inv.Node
	}
	return "script"
}

// run runs setup and then body under the runtime's watchdog and maps how
// they ended to the call's error. Setup and body run on the calling
// goroutine; a stop (a limit, a signal, a cancel) unwinds them. trySetup
// runs setup in a JavaScript try frame, for a setup that makes script
// values which may throw (a config, an expression's vars); a setup that
// only installs objects needs none, and a panic still ends the call.
func (c *call) run(trySetup bool, setup func(), body func() error) (err error) {
	c.watchStart()
	defer func() {
		if p := recover(); p != nil {
			err = c.panicked(p)
		}
		c.watchEnd()
		c.cancel()
		if err != nil && c.stopped.Load() {
			c.afterStop(err)
		}
	}()
	if trySetup {
		if ex := c.vm.Try(setup); ex != nil {
			return c.result(ex)
		}
	} else {
		setup()
	}
	if c.stopped.Load() {
		return c.result(nil)
	}
	return c.result(body())
}

// watchStart registers the call with the runtime's watchdog (memory,
// host ceiling, Close) and arms its stops on the event: the wall-time
// timer, and context.AfterFunc on the caller's context when it can end.
// Neither callback carries the call's generation: each checks the call
// the VM runs when it fires (its deadline, its caller's context), so
// that one that comes late never stops the next call. watchEnd must
// follow.
func (c *call) watchStart() {
	c.rt.watchdog.add(c, watch{gen: c.gen, budget: c.limits.MemoryBytes})
	c.mu.Lock() // wallTimeUp reads the timer under the lock
	switch {
	case c.wallTimer == nil:
		c.wallTimer = time.AfterFunc(time.Until(c.deadline), c.wallTimeUp)
		c.wallAt = c.deadline
	case c.wallAt.IsZero() || c.wallAt.After(c.deadline):
		c.wallTimer.Reset(time.Until(c.deadline))
		c.wallAt = c.deadline
	}
	c.mu.Unlock()
	if done := c.parent.Done(); done != nil {
		c.mu.Lock()
		if done != c.afterDone {
			c.watchParentLocked(done)
		}
		c.mu.Unlock()
	}
}

// watchParentLocked registers parentDone with the caller's context,
// whose Done channel is done, in place of the registration the VM held;
// c.mu is held.
func (c *call) watchParentLocked(done <-chan struct{}) {
	if c.stopAfter != nil {
		c.stopAfter()
	}
	if c.onParentDone == nil {
		c.onParentDone = c.parentDone
	}
	c.afterDone, c.stopAfter = done, context.AfterFunc(c.parent, c.onParentDone)
}

// unwatchParent ends the VM's registration with a caller's context: the
// VM is dropped, and must not stay reachable from a context that lives on.
func (c *call) unwatchParent() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopAfter != nil {
		c.stopAfter()
	}
	c.afterDone, c.stopAfter = nil, nil
	if c.wallTimer != nil {
		c.wallTimer.Stop()
		c.wallAt = time.Time{}
	}
}

// watchEnd undoes watchStart once the call ended, but for the context
// registration, which the VM's next call may share, and the wall-time
// timer, left armed for the next call (call.wallTimer).
func (c *call) watchEnd() {
	c.rt.watchdog.remove(c)
}

// wallTimeUp stops the running call once its deadline has passed; a
// timer that fires early is set again for the rest, and one that fires
// between calls is left unarmed.
func (c *call) wallTimeUp() {
	c.mu.Lock()
	c.wallAt = time.Time{}
	if c.parent == nil || c.ended {
		c.mu.Unlock()
		return
	}
	if left := time.Until(c.deadline); left > 0 {
		c.wallTimer.Reset(left)
		c.wallAt = c.deadline
		c.mu.Unlock()
		return
	}
	c.stopLocked(c.limitError(sandbox.LimitWallTime))
}

// parentDone runs when a context the VM registered with ends: the
// registration is over, and the running call is stopped if that context
// is its caller's.
func (c *call) parentDone() {
	c.mu.Lock()
	if c.afterDone != nil {
		select {
		case <-c.afterDone:
			c.afterDone, c.stopAfter = nil, nil
		default:
		}
	}
	if c.parent == nil || c.parent.Err() == nil {
		c.mu.Unlock()
		return
	}
	c.stopLocked(c.contextStop(c.parent.Err()))
}

// afterStop asks for a GC once a call stopped for memory ended: what it
// held is garbage (watchdog.requestGC).
func (c *call) afterStop(err error) {
	var le *sandbox.LimitError
	if errors.As(err, &le) && le.Limit == sandbox.LimitMemory {
		c.rt.watchdog.requestGC()
	}
}

// panicked maps a panic that reached run: a stop unwinding Go code that
// the VM did not call, a host error thrown outside the VM, or a fault in
// the script engine (Internal). It ends the call.
func (c *call) panicked(p any) error {
	if c.endReason() != nil {
		return c.result(nil)
	}
	if obj, ok := p.(*goja.Object); ok {
		if herr, ok := c.hostErrors[obj]; ok {
			return fmt.Errorf("%s: %w", c.op.String(), herr)
		}
	}
	if err, ok := p.(error); ok {
		return c.result(err)
	}
	c.broken = true
	return fault.New(fault.Internal, c.op.String(), "script engine failure: %v", p)
}

// Eval evaluates a JavaScript expression over ev.Vars, in a pooled VM
// whose built-ins are frozen and whose global object is new for each
// expression: its globals are ev.Vars and the standard built-ins (no host,
// no board), and nothing one expression does is seen by the next. An identifier
// that names neither a var nor a built-in reads as undefined, so a
// condition over a var that is not set yet is simply false. The result
// crosses as JSON: map[string]any, []any, float64, string, bool or nil
// (undefined is nil). Errors: Validation for an expression that does not
// compile, Internal (a *sandbox.ScriptError) for one that throws, and the
// wall-time, stack and memory limits as for Invoke.
func (r *Runtime) Eval(ctx context.Context, ev sandbox.Evaluation) (any, error) {
	op := opName{r, "eval", ev.Node}
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, op.String())
	}
	limits, err := r.callLimits(ev.Limits, op, ev.Node)
	if err != nil {
		return nil, err
	}
	comp, err := r.exprs.get(cacheKey(keyExpr, "expression", ev.Expr), func() (*compiled, error) {
		return compileExpr("expression", ev.Expr)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.String(), err)
	}
	if err := r.acquire(ctx, op); err != nil {
		return nil, err
	}
	c, err := r.fresh(ev.Tenant)
	if err != nil {
		r.leave(true)
		return nil, fmt.Errorf("%s: %w", op.String(), err)
	}
	c.slotHeld = true
	defer r.finish(c)
	c.bindOp(ctx, op, ev.Node, limits)
	var out any
	err = c.run(true, func() {
		c.defineVars(c.newGlobal(), ev.Vars, comp)
	}, func() error {
		c.bigOK = comp.bigint
		v, err := c.vm.RunProgram(comp.prog)
		if err != nil {
			return err
		}
		if ex := c.vm.Try(func() { out = c.toGo(v, c.limits.MaxValueBytes, sandbox.LimitValueBytes) }); ex != nil {
			return ex
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// defineVars makes each var a global, and each other identifier the
// expression mentions that is not a global an undefined one. An
// expression that sees vars only by name (compiled.varsByName) gets only
// the vars it names: the others it could not tell from absent ones, and a
// large board costs a condition nothing for the vars it does not read.
func (c *call) defineVars(g *goja.Object, vars map[string]any, comp *compiled) {
	if comp.varsByName {
		for _, id := range comp.idents {
			if v, ok := vars[id]; ok {
				c.defineVar(g, id, v)
			}
		}
	} else {
		keys := c.varKeys[:0]
		for k := range vars {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		c.varKeys = keys // release clears them if a var throws
		for _, k := range keys {
			c.defineVar(g, k, vars[k])
		}
		clear(keys)
		c.varKeys = keys[:0]
	}
	for _, id := range comp.idents {
		if _, ok := vars[id]; !ok && g.Get(id) == nil {
			_ = g.DefineDataProperty(id, goja.Undefined(), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		}
	}
}

// defineVar makes var name, of value v, a global of g.
func (c *call) defineVar(g *goja.Object, name string, v any) {
	_ = g.DefineDataProperty(name, c.fromGo(v, c.budget(), sandbox.LimitMemory), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
}
