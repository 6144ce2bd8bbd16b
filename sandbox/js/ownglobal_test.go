package js

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js/internal/bigop"
	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needsOwnGlobal: scripts that only read globals and write names they
// declare share a global object; anything that might reach the global
// object, or that the analysis does not know, gets its own.
func TestNeedsOwnGlobal(t *testing.T) {
	t.Parallel()
	shared := []string{
		`board.setVar("x", 1)`,
		`var a = 1; a = 2; a += 3; board.setVar("a", a)`,
		`let i = 0; i++; --i; for (const k of [1, 2]) { i += k }`,
		`for (var k in {a: 1}) { k = k + "!" }`,
		`for (let j = 0; j < 2; j++) { j = j }`,
		`function f(p, ...rest) { p = 1; rest = []; return p } f(0)`,
		`const g = function named() { named = 1 }; g()`,
		`const [a, b = 2, ...c] = [1]; let d, e; [d, , e = 4] = [3]; ({d, e: [e]} = {d: 1, e: [2]})`,
		`try { throw 1 } catch (err) { err = 2 } catch2: for (;;) { break catch2 }`,
		`try { throw {m: 1} } catch ({m}) { m = 3 }`,
		`const h = (x, {y} = {}) => { x = 2; y = 3; let z; z = x + y; return z }; h(1)`,
		`class A { m(q) { let y; y = q } static s() {} } new A().m(1)`,
		`switch (1) { case 1: let z; z = 2; break; default: z = 3 }`,
		`let o = {}; o.x = 1; o["y"] = 2; o.z ??= 3; delete o.x`,
		`{ let inner; inner = 1 } if (true) { function local() {} local = 2 }`,
		`let n = 0; [1, 2].forEach((v) => { n += v }); board.setVar("n", n)`,
		`const s = "this, globalThis, eval and Function in a string"; board.setVar("s", s.length)`,
		`let cnt = 0; label: while (cnt < 3) { cnt++; continue label }`,
		`const o = {a: 1}; board.setVar("p", o.__proto__ === Object.prototype)`,
		"const s = `template ${1}`; board.setVar(\"s\", s)",
		`function f(a, b = (a = 2)) { var v; v = a + b; return v } f(1)`,
		`switch (1) { case 1: { let s2; s2 = 1 } }`,
		`const o = {board, x: 1}; o.x = 2`,
		`const key = "label"; const obj = {}; obj[key] = 1`,
	}
	own := []string{
		`x = 1`,
		`this.x = 1`,
		`globalThis.x = 1`,
		`(function () { return this })().x = 1`,
		`eval("1")`,
		`Function("return 1")()`,
		`delete x`,
		`{ let y } y = 1`,
		`function f() { var q } q = 1`,
		`for (u in {a: 1}) {}`,
		`for (v of [1]) {}`,
		`[w] = [1]`,
		`({w2} = {})`,
		`({a: w3} = {a: 1})`,
		`[...w4] = [1]`,
		`u2++`,
		`--u3`,
		`x ??= 1`,
		`x ||= 1`,
		`class B extends Object { m() { return super.toString() } }`,
		`if (true) { function g() {} } g = 1`,
		`const k = () => { undeclared = 1 }; k()`,
		`try {} catch (e) {} e = 1`,
		`for (let i of []) {} i = 1`,
		`function outer() { arguments = 1 } outer()`,
		// A default value does not see the function body's var declarations.
		`function f(a = (x = 1)) { var x } f()`,
		`function f(a = ([x] = [7])) { var x } f()`,
		`const f = (a = (x = 1)) => { var x }; f()`,
		`const o = { m(a = () => { x = 1 }) { var x; a() } }; o.m()`,
		// A switch's discriminant is outside the scope of its cases.
		`switch (x = 5) { case 5: let x }`,
		`switch ([q] = [3]) { case 1: class q {} }`,
		// A function as the lone body of an if is an assignment.
		`if (true) function ff() { return 1 }`,
		`if (false) ; else function fe() {}`,
		// Shorthand properties read the names.
		`const { globalThis: g } = { globalThis }; g.count = 1`,
		`const o = { eval }; o.eval("var zz = 1")`,
		`const o = { Function }`,
		// The way to the Function constructor without naming it.
		`const F = (() => {}).constructor; F("counter = 1")()`,
		`[].constructor.constructor("return this")().k = 5`,
		`Object.getOwnPropertyDescriptor(Function.prototype, "constructor").value("x = 1")()`,
		"const F = [][`constructor`][`constructor`]; F(\"q = 1\")()",
		`const { constructor } = () => {}; constructor("q = 1")()`,
		// A bare __proto__ reads the global object's prototype, the layer.
		`const g = __proto__.globalThis; g.count = 5`,
		`const { globalThis: g } = __proto__`,
		`const o = { __proto__ }`,
		`const e = __proto__.eval; e("var zz = 1")`,
		`const F = obj.Function`,
	}
	for _, src := range shared {
		comp, err := compileScript("t", src)
		require.NoError(t, err, src)
		assert.True(t, comp.sharedGlobal, "shared: %s", src)
	}
	for _, src := range own {
		comp, err := compileScript("t", src)
		require.NoError(t, err, src)
		assert.False(t, comp.sharedGlobal, "own: %s", src)
	}
	expr, err := compileExpr("e", `a == 1`)
	require.NoError(t, err)
	assert.False(t, expr.sharedGlobal, "only node scripts share")
}

// A script that reaches the shared global object anyway, through code it
// makes at run time from a constructor property it names with a computed
// key, can leave nothing on it: it is frozen, and the VM is dropped after
// code made at run time.
func TestSharedGlobalKeepsNothing(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	board := agent.NewBoard()
	invoke := func(src string) {
		t.Helper()
		require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: src}}, board))
	}
	leak := `const key = ["con", "structor"].join("")
		const make = [][key][key]
		const g = make("return this")()
		g.leak = 1
		make("leak2 = 2")()
		board.setVar("frozen", Object.isFrozen(g) && g.leak === undefined && typeof leak2 === "undefined")`
	comp, err := compileScript("n", leak)
	require.NoError(t, err)
	require.True(t, comp.sharedGlobal, "the analysis cannot see code made at run time")
	invoke(leak)
	invoke(`board.setVar("after", typeof leak + "," + typeof leak2)`)
	assert.Equal(t, true, board.Vars["frozen"])
	assert.Equal(t, "undefined,undefined", board.Vars["after"])

	// A script that writes an undeclared name still works, on a global
	// object of its own.
	invoke(`total = 2; board.setVar("total", total)`)
	invoke(`board.setVar("seen", typeof total)`)
	assert.Equal(t, 2.0, board.Vars["total"])
	assert.Equal(t, "undefined", board.Vars["seen"])
}

// FuzzNeedsOwnGlobal checks the analysis against what a script does: one
// found not to need its own global object, run with one that is not
// frozen, must leave it as it was (unless it ran code made at run time,
// which the frozen shared object and the VM drop cover). Malformed input
// is refused, never a panic.
func FuzzNeedsOwnGlobal(f *testing.F) {
	for _, s := range []string{`board.setVar("x", 1)`, `x = 1`, `let a; [a] = [1]`, `for (k in {}) {}`,
		`var v; v = 1; w = v`, `function f() { this.y = 1 } f()`, `(() => { z = 1 })()`, `try {} catch ({e}) { e = 1 }`,
		`function f(a = (x = 1)) { var x } f()`, `switch (x = 5) { case 5: let x }`, `if (true) function ff() {}`,
		`const { globalThis: g } = { globalThis }; g.count = 1`} {
		f.Add(s)
	}
	rt, err := New(Options{PoolSize: 1, Limits: sandbox.Limits{WallTime: 100e6, StackDepth: 64, MemoryBytes: 16 << 20}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = rt.Close() })
	f.Fuzz(func(t *testing.T, src string) {
		comp, err := compileScript("fuzz", src)
		if err != nil || !comp.sharedGlobal {
			return
		}
		own, ranCode := runWithOwnGlobal(t, rt, comp)
		if !ranCode && len(own) > 0 {
			t.Fatalf("%q was found not to reach its global object, but left %v on it", src, own)
		}
	})
}

// runWithOwnGlobal runs comp as Invoke does, but on a new global object of
// its own, and returns what the call left on that object.
func runWithOwnGlobal(t *testing.T, r *Runtime, comp *compiled) (own []string, ranCode bool) {
	ctx := context.Background()
	op := opName{r, "invoke", "fuzz"}
	require.NoError(t, r.acquire(ctx, op))
	c, err := r.fresh("")
	require.NoError(t, err)
	c.slotHeld = true
	defer r.finish(c)
	c.bindOp(ctx, op, "fuzz", r.limits)
	c.prefixLen = len(scriptPrefix)
	var global, layer *goja.Object
	_ = c.run(false, func() {
		c.installGlobals(sandbox.Invocation{Node: "fuzz", Board: *agent.NewBoard()}, false)
		global, layer = c.vm.GlobalObject(), c.apis.layer
	}, func() error {
		f, err := c.scriptFunc(comp)
		if err != nil {
			return err
		}
		_, err = f(goja.Undefined())
		return err
	})
	if global == nil {
		return nil, c.ranCode
	}
	for _, name := range global.GetOwnPropertyNames() {
		if name != spreadGuard && name != arraySpreadGuard && name != bigop.Global { // every global object holds them
			own = append(own, name)
		}
	}
	for _, s := range global.Symbols() {
		own = append(own, s.String())
	}
	if global.Prototype() != layer {
		own = append(own, "[[Prototype]]")
	}
	return own, c.ranCode
}

// A script behaves the same whether it runs with the shared global object
// or with one of its own: each script runs as it is and with a use of this
// appended (which gives it its own), and both leave the same board and the
// same error, if any.
func TestSharedGlobalSameBehaviour(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	for _, src := range []string{
		`board.setVar("x", 1)`,
		`function f(a = (x = 1)) { var x } f(); board.setVar("x", typeof x)`,
		`function f(a = ([x] = [7])) { var x } f(); board.setVar("x", x)`,
		`switch (x = 5) { case 5: let x; } board.setVar("x", x)`,
		`if (true) function ff() { return 1 } board.setVar("r", ff())`,
		`const { globalThis: g } = { globalThis }; g.count = (g.count || 0) + 1; board.setVar("r", g.count)`,
		`const o = { eval }; board.setVar("r", o.eval("var zz = 1; zz"))`,
		`const F = (() => {}).constructor; F("counter = 1")(); F("counter++")(); board.setVar("r", F("return counter")())`,
		`let n = 0; for (const v of [1, 2, 3]) { n += v } board.setVar("n", n)`,
		`"use strict"; let s = 0; [1, 2].forEach((v) => { s += v }); board.setVar("s", s)`,
		`try { undeclaredRead } catch (e) { board.setVar("e", e.name) }`,
		`const g = __proto__.globalThis; g.count = 5; board.setVar("r", typeof count)`,
		`"use strict"; const g = __proto__.globalThis; g.count = 5; board.setVar("r", typeof count)`,
		`const e = __proto__.eval; board.setVar("r", e("var zz = 1; typeof zz"))`,
		`const { constructor } = () => {}; board.setVar("r", constructor("q = 1; return typeof q")())`,
		"const F = [][`constructor`][`constructor`]; board.setVar(\"r\", F(\"q = 1; return typeof q\")())",
	} {
		run := func(source string) (map[string]any, string) {
			board := agent.NewBoard()
			err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: source}}, board)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			return board.Vars, msg
		}
		comp, err := compileScript("n", src)
		require.NoError(t, err, src)
		forced := src + "\n;if (false) { this }"
		forcedComp, err := compileScript("n", forced)
		require.NoError(t, err)
		require.False(t, forcedComp.sharedGlobal)
		vars, msg := run(src)
		ownVars, ownMsg := run(forced)
		assert.Equal(t, ownVars, vars, "%s (shared: %v)", src, comp.sharedGlobal)
		assert.Equal(t, ownMsg != "", msg != "", "%s: %q / %q", src, msg, ownMsg)
	}
}
