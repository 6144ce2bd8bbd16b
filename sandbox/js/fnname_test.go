package js_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/js/internal/fnname"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nameDepth is how deep the name attacks recurse through the function
// they rename, and nameChars how long a name they give it.
const (
	nameDepth = 100
	nameChars = 4 * fnname.MaxChars
)

// nameAttack wraps an attack that makes g, a native function that calls
// r, answer to a long name s: it recurses nameDepth times through g and
// says how long the stack of the error it made is, or how the attack was
// refused.
func nameAttack(attack string) string {
	return `const s = "x".repeat(` + strconv.Itoa(nameChars) + `);
function r(n) { return n === 0 ? new Error("e") : g(n - 1) }
let g = r.bind(null), out;
try {
	` + attack + `
	out = "stack " + r(` + strconv.Itoa(nameDepth) + `).stack.length;
} catch (e) { out = "refused " + e.name + ": " + e.message }
out`
}

// checkNameStack runs src, a script whose value is "stack N" (the length
// of a stack it made) or "refused " and the error that stopped it, on a
// bare goja VM, where the stack must multiply the name (the control), and
// in the sandbox, where the stack must stay small, or the attack be
// refused with a TypeError or a SyntaxError, or the script as it is
// compiled.
func checkNameStack(t *testing.T, rt *js.Runtime, src string) {
	t.Helper()
	bare, err := goja.New().RunString(src)
	require.NoError(t, err)
	n, ok := strings.CutPrefix(bare.String(), "stack ")
	require.True(t, ok, "on a bare VM: %s", bare)
	got, _ := strconv.Atoi(n)
	require.Greater(t, got, nameDepth*nameChars, "on a bare VM the stack multiplies the name")
	i := strings.LastIndex(src, "\n")
	b, err := invoke(t, rt, "board.setVar(\"out\", (() => {"+src[:i]+"\nreturn "+src[i+1:]+"})())")
	if err != nil {
		assert.Contains(t, err.Error(), "more than 1024", "refused as it is compiled")
		return
	}
	out, _ := b.Vars["out"].(string)
	if n, ok := strings.CutPrefix(out, "stack "); ok {
		got, _ := strconv.Atoi(n)
		assert.Less(t, got, (nameDepth+1)*(fnname.MaxChars+100), "the stack stays small")
		return
	}
	assert.True(t, strings.HasPrefix(out, "refused TypeError") || strings.HasPrefix(out, "refused SyntaxError"), out)
}

// REF 9.M20: an error's stack holds the name of every frame's function,
// written out at its first read in one step; a script that gives a
// function a long name and recurses through it would make that step as
// large as the name times the depth. Every way a script has to give a
// native function (a bound function here) a long name is refused, and the
// stack stays small. Each attack is first run on a bare goja VM, where it
// does multiply the name: the test would fail without the guards.
func TestFunctionNamesAreBounded(t *testing.T) {
	t.Parallel()
	stamp := `class Base { constructor(o) { return o } }; `
	reviver := `Object.defineProperty(g, "name", {enumerable: true}); ` +
		`JSON.parse('{"a":1,"b":0}', function (k, v) { if (k === "a") this.b = g; return k === "name" ? NAME : v }); `
	attacks := []struct{ name, src string }{
		{"defineProperty", `Object.defineProperty(g, "name", {value: s})`},
		{"defineProperty on the target", `Object.defineProperty(r, "name", {value: s}); g = r.bind(null)`},
		{"Reflect.defineProperty", `if (!Reflect.defineProperty(g, "name", {value: s})) throw new TypeError("Reflect said no")`},
		{"defineProperties", `Object.defineProperties(g, {name: {value: s}})`},
		{"a getter", `Object.defineProperty(g, "name", {get() { return s }})`},
		{"made writable", `Object.defineProperty(g, "name", {writable: true}); g.name = s`},
		{"an object that converts", `Object.defineProperty(g, "name", {value: {toString() { return s }}})`},
		{"through a proxy", `Object.defineProperty(new Proxy(g, {}), "name", {value: s})`},
		{"a computed key and bind", `const named = {[s]: function (n) { return n === 0 ? new Error("e") : g(n - 1) }}[s]; ` +
			`g = named.bind(null)`},
		{"delete, then a prototype", `delete Function.prototype.name; delete g.name; Object.prototype.name = s`},
		{"delete by a computed key", `const k = "na" + "me"; delete g[k]; Object.setPrototypeOf(g, {name: s})`},
		{"Reflect.deleteProperty", `if (!Reflect.deleteProperty(g, "name")) throw new TypeError("Reflect said no"); ` +
			`Object.setPrototypeOf(g, {name: s})`},
		// the engine's own definitions, past the built-ins: a class field
		// defined on a function a base constructor returned, and a
		// JSON.parse reviver, which defines or deletes every enumerable
		// key of what it walks
		{"a class field", stamp + `class S extends Base { name = s }; new S(g)`},
		{"a computed class field", stamp + `class S extends Base { ["na" + "me"] = s }; new S(g)`},
		{"a class field through a proxy", stamp + `class S extends Base { name = s }; new S(new Proxy(g, {}))`},
		{"a class field, then assignment", stamp + `class S extends Base { name = "" }; new S(g); g.name = s`},
		{"a class field, then Object.assign", stamp + `class S extends Base { name = "" }; new S(g); Object.assign(g, {name: s})`},
		{"a class field, an object", stamp + `class S extends Base { name = {toString() { return s }} }; new S(g)`},
		{"a JSON.parse reviver", strings.Replace(reviver, "NAME", "s", 1)},
		{"a JSON.parse reviver deletes", strings.Replace(reviver, "NAME", "undefined", 1) + `Object.setPrototypeOf(g, {name: s})`},
	}
	rt := mustNew(t, js.Options{})
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) { checkNameStack(t, rt, nameAttack(a.src)) })
	}
}

// Names the source gives are bounded as the script is compiled: a script
// is refused before it runs, and eval and Function throw a SyntaxError.
func TestLongNamesInSourceAreRefused(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("f", fnname.MaxChars+1)
	rt := mustNew(t, js.Options{})
	for _, src := range []string{
		"function " + long + "() {}",
		"const " + long + " = () => 1",
		"const o = {" + long + "() {}}",
		`const o = {"` + long + `": function () {}}`,
		"class C { #" + long + "() {} }",
		"class C { '" + long + "' = () => 1 }",
		`eval("function ` + long + `() {}")`,
		`new Function("function ` + long + `() {}")`,
	} {
		_, err := invoke(t, rt, src)
		if !strings.Contains(src, "eval") && !strings.Contains(src, "Function") {
			sandboxtest.RequireKind(t, err, fault.Validation)
		} // eval and Function throw the refusal in the script, a SyntaxError
		require.Error(t, err)
		assert.Contains(t, err.Error(), "characters, more than 1024", src[:20])
	}
	for _, src := range []string{
		`const o = {"` + long + `": 1}; board.setVar("ok", Object.keys(o)[0].length)`, // data, not a function
		"const " + long[:fnname.MaxChars] + ` = 1; board.setVar("ok", 1)`,
	} {
		b, err := invoke(t, rt, src)
		require.NoError(t, err, src[:20])
		assert.NotNil(t, b.Vars["ok"])
	}
}

// What the guards leave alone behaves as the language says: short names
// are set, properties of objects and functions deleted, keys converted
// once, strict code still throws on a delete that fails.
func TestFunctionNamesKeepTheirMeaning(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	checks := map[string]string{
		"define":        `function f() {}; Object.defineProperty(f, "name", {value: "short"}); return f.name`,
		"reflect":       `const f = () => 1; return Reflect.defineProperty(f, "name", {value: 7}) && f.name`,
		"properties":    `const f = () => 1, sym = Symbol("k"); Object.defineProperties(f, {name: {value: "n"}, [sym]: {value: 2, enumerable: true}, x: {value: 3}}); return f.name + f[sym] + f.x`,
		"reads once":    `let reads = 0; function f() {}; Object.defineProperty(f, "name", {get value() { reads++; return "v" }}); return f.name + reads`,
		"bind":          `function f() {}; return f.bind(null).name`,
		"delete":        `const o = {name: 1, a: 2}; delete o.name; delete o["a"]; return Object.keys(o).length`,
		"delete once":   `let n = 0; const k = {toString() { n++; return "a" }}; const o = {a: 1}, f = function () {}; f.a = 1; delete o[k]; delete f[k]; return [n, "a" in o, "a" in f].join()`,
		"strict delete": `"use strict"; try { delete Object.prototype; return "deleted" } catch (e) { return e.name }`,
		"sloppy delete": `return delete Math.PI`,
		"name kept":     `function f() {}; let e = ""; try { delete f.name } catch (x) { e = x.name }; return e + Reflect.deleteProperty(f, "name") + f.name`,
		"other keys":    `function f() {}; f.x = 1; delete f.x; return "x" in f`,
		"class fields":  `class A {}; class B extends A { name = "b"; ["x" + 1] = 2; #p = 3; p() { return this.#p } }; const b = new B(); return b.name + b.x1 + b.p()`,
	}
	want := map[string]any{
		"define": "short", "reflect": 7.0, "properties": "n23", "reads once": "v1", "bind": "bound f",
		"delete": 0.0, "delete once": "2,false,false", "strict delete": "TypeError", "sloppy delete": false,
		"name kept": "TypeErrorfalsef", "other keys": false, "class fields": "b23",
	}
	for name, body := range checks {
		strict := ""
		if strings.HasPrefix(body, `"use strict"`) {
			strict, body = `"use strict"; `, strings.TrimPrefix(body, `"use strict"; `)
		}
		b, err := invoke(t, rt, `board.setVar("out", (function () { `+strict+body+` })())`)
		require.NoError(t, err, name)
		assert.Equal(t, want[name], b.Vars["out"], name)
	}
	_, err := invoke(t, rt, `const o = {}; delete o?.[1]`)
	sandboxtest.RequireKind(t, err, fault.Validation)
	b, err := invoke(t, rt, `const o = {x: 1}; delete o?.x; board.setVar("out", "x" in o)`)
	require.NoError(t, err)
	assert.Equal(t, false, b.Vars["out"])
}

// An uncaught error about an object that converts to no primitive names
// no Go value or heap address of the host's (goja's text prints both): the
// message is V8's, the same in every run.
func TestConversionErrorsNameNoAddress(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	for _, src := range []string{`Object.create(null) + "x"`, "`${Object.create(null)}`", `String({toString: 1, valueOf: 1})`} {
		_, err := invoke(t, rt, src)
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), "TypeError: Cannot convert object to primitive value", src)
		assert.NotContains(t, err.Error(), "0x", src)
	}
}

// A native frame's name is read when an error is made, and a name that is
// an object is converted by its toString, script code run while the stack
// is captured: once the call stack is full, the RangeError's capture runs
// toString, whose call finds the stack full and captures again, a Go
// recursion without end that ends the process (a fatal stack overflow, on
// a bare VM). Given past the guards, by a class field or by a [[Set]]
// whose receiver is a proxy that says the name is absent, it is refused
// and the process lives. Each script runs in a child with a small Go
// stack.
func TestObjectNamesDoNotEndTheProcess(t *testing.T) {
	const recurse = `function r() { return g() }; const g = r.bind(null); `
	attacks := map[string]string{
		"a class field": `class B { constructor(o) { return o } }; class S extends B { name = {toString() { return "n" }} }; ` +
			recurse + `new S(g); `,
		"a proxy": recurse + `const p = new Proxy(g, {getOwnPropertyDescriptor(t, k) { return k === "name" ? undefined : ` +
			`Reflect.getOwnPropertyDescriptor(t, k) }}); Reflect.set({name: ""}, "name", {toString() { return "n" }}, p); `,
	}
	if mode, name, ok := strings.Cut(os.Getenv("CORRAL_NAME_CHILD"), ":"); ok {
		debug.SetMaxStack(8 << 20)
		if mode == "bare" {
			vm := goja.New()
			vm.SetMaxCallStackSize(sandbox.DefaultStackDepth)
			_, err := vm.RunString(recurse + `Object.defineProperty(g, "name", {value: {toString() { return "n" }}}); try { r() } catch (e) {}`)
			t.Logf("bare: %v", err)
			return
		}
		_, err := invoke(t, mustNew(t, js.Options{}), attacks[name]+`r()`)
		fmt.Printf("sandbox: %v\n", err)
		return
	}
	run := func(mode string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestObjectNamesDoNotEndTheProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "CORRAL_NAME_CHILD="+mode)
		out, err := cmd.CombinedOutput()
		if i := strings.Index(string(out), "\ngoroutine "); i > 0 {
			out = out[:i] // the first lines say enough
		}
		return string(out), err
	}
	out, err := run("bare:")
	require.Error(t, err, "on a bare VM the process dies")
	require.Contains(t, out, "fatal error: stack overflow")
	for name := range attacks {
		out, err := run("sandbox:" + name)
		require.NoError(t, err, "%s: %s", name, out)
		assert.Contains(t, out, "sandbox: ", name)
		assert.NotContains(t, out, "stack overflow", name)
	}
}
