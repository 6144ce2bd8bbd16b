package js_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/js/internal/fnname"
	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runNameAttack runs nameAttack(attack) on a bare goja VM, where the stack
// must multiply the name (the control), and in the sandbox, where the
// stack must stay small or the attack be refused with a TypeError.
func runNameAttack(t *testing.T, rt *js.Runtime, attack string) {
	t.Helper()
	src := nameAttack(attack)
	bare, err := goja.New().RunString(src)
	require.NoError(t, err)
	n, ok := strings.CutPrefix(bare.String(), "stack ")
	require.True(t, ok, "on a bare VM: %s", bare)
	got, _ := strconv.Atoi(n)
	require.Greater(t, got, nameDepth*nameChars, "on a bare VM the stack multiplies the name")
	b, err := invoke(t, rt, "board.setVar(\"out\", (() => {"+strings.Replace(src, "\nout", "\nreturn out", 1)+"})())")
	require.NoError(t, err)
	out, _ := b.Vars["out"].(string)
	if n, ok := strings.CutPrefix(out, "stack "); ok {
		got, _ := strconv.Atoi(n)
		assert.Less(t, got, (nameDepth+1)*(fnname.MaxChars+100), "the stack stays small")
		return
	}
	assert.True(t, strings.HasPrefix(out, "refused TypeError"), out)
}

// A proxy of a function forwards [[DefineOwnProperty]] and [[Delete]] to
// its target when its handler has no trap for them, and its
// getOwnPropertyDescriptor trap may report the target's configurable name
// as enumerable, writable or absent. The engine's own definitions and
// deletions then reach the function's name past every wrapped built-in:
// JSON.parse's reviver (it defines or deletes each key the proxy reports
// enumerable) and [[Set]] with the proxy as receiver (Reflect.set, a super
// property), which defines the name on the receiver when the receiver
// reports it writable or absent.
func TestFunctionNamesPastProxies(t *testing.T) {
	t.Parallel()
	const (
		enumerable = `const p = new Proxy(g, {getOwnPropertyDescriptor(t, k) { const d = Reflect.getOwnPropertyDescriptor(t, k); ` +
			`if (k === "name") d.enumerable = true; return d }}); `
		writable = `const p = new Proxy(g, {getOwnPropertyDescriptor(t, k) { const d = Reflect.getOwnPropertyDescriptor(t, k); ` +
			`if (k === "name") d.writable = true; return d }}); `
		absent  = `const p = new Proxy(g, {getOwnPropertyDescriptor(t, k) { return k === "name" ? undefined : Reflect.getOwnPropertyDescriptor(t, k) }}); `
		reviver = `JSON.parse('{"a":1,"b":0}', function (k, v) { if (k === "a") this.b = p; return k === "name" ? NAME : v }); `
	)
	attacks := []struct{ name, src string }{
		{"a JSON.parse reviver through a proxy", enumerable + strings.Replace(reviver, "NAME", "s", 1)},
		{"a JSON.parse reviver deletes through a proxy", enumerable + strings.Replace(reviver, "NAME", "undefined", 1) +
			`Object.setPrototypeOf(g, {name: s})`},
		{"a JSON.parse reviver deletes, then a getter", enumerable + strings.Replace(reviver, "NAME", "undefined", 1) +
			`Object.setPrototypeOf(g, {get name() { return s }})`},
		{"Reflect.set, a receiver that says writable", writable +
			`if (!Reflect.set({name: ""}, "name", s, p)) throw new TypeError("set said no")`},
		{"Reflect.set, a receiver that says absent", absent +
			`if (!Reflect.set({name: ""}, "name", "", p)) throw new TypeError("set said no"); g.name = s`},
		{"a super property, a receiver that says absent", absent +
			`({__proto__: {name: ""}, m() { super.name = s }}).m.call(p)`},
	}
	rt := mustNew(t, js.Options{})
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) { runNameAttack(t, rt, a.src) })
	}
}

// The same route gives a native function a name that is an object: its
// toString runs as the stack is captured, and at a full call stack the
// capture of the RangeError calls it, finds the stack full and captures
// again, a Go recursion without end. The script runs in a child with a
// small Go stack: on a bare VM the process dies, and in the sandbox it
// must live.
func TestObjectNameThroughAProxyDoesNotEndTheProcess(t *testing.T) {
	const attack = `function r() { return g() }; const g = r.bind(null); ` +
		`const p = new Proxy(g, {getOwnPropertyDescriptor(t, k) { return k === "name" ? undefined : Reflect.getOwnPropertyDescriptor(t, k) }}); ` +
		`Reflect.set({name: ""}, "name", {toString() { return "n" }}, p); `
	switch os.Getenv("CORRAL_PROXY_NAME_CHILD") {
	case "bare":
		debug.SetMaxStack(8 << 20)
		vm := goja.New()
		vm.SetMaxCallStackSize(sandbox.DefaultStackDepth)
		_, err := vm.RunString(attack + `try { r() } catch (e) {}`)
		t.Logf("bare: %v", err)
		return
	case "sandbox":
		debug.SetMaxStack(8 << 20)
		rt := mustNew(t, js.Options{})
		_, err := invoke(t, rt, attack+`r()`)
		fmt.Printf("sandbox: %v\n", err)
		return
	case "":
	default:
		return
	}
	run := func(mode string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestObjectNameThroughAProxyDoesNotEndTheProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "CORRAL_PROXY_NAME_CHILD="+mode)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("bare")
	require.Error(t, err, "on a bare VM the process dies")
	require.Contains(t, out, "fatal error: stack overflow")
	out, err = run("sandbox")
	if i := strings.Index(out, "\ngoroutine "); i > 0 {
		out = out[:i]
	}
	require.NoError(t, err, out)
	assert.Contains(t, out, "sandbox: ")
}

// goja treats a computed key that folds to a constant (a string literal,
// a concatenation of literals) as a literal key, and names a function its
// value with it at compile time: the name every frame of that function
// writes into a stack: a script function could be named with as many
// characters as its source holds, and eval takes source built at run time
// from a string as long as the memory budget allows. A long constant key
// is passed through the helper, which goja does not fold.
func TestConstantComputedKeysDoNotNameFunctionsPastTheBound(t *testing.T) {
	t.Parallel()
	long := `"` + strings.Repeat("x", nameChars) + `"`
	half := `"` + strings.Repeat("x", nameChars/2) + `"`
	body := `(n) { return n === 0 ? new Error("e") : f(n - 1) }`
	srcs := map[string]string{
		"object method":         `const o = {[` + long + `]` + body + `}; const f = Object.values(o)[0]`,
		"object function value": `const o = {[` + long + `]: function ` + body + `}; const f = Object.values(o)[0]`,
		"concatenated literals": `const o = {[` + half + ` + ` + half + `]: function ` + body + `}; const f = Object.values(o)[0]`,
		"static class method":   `class C { static [` + long + `]` + body + ` }; const f = Object.getOwnPropertyNames(C).map(k => C[k]).find(v => typeof v === "function")`,
		"class field function":  `class C { [` + long + `] = function ` + body + ` }; const f = Object.values(new C())[0]`,
		"eval of a runtime string": `const k = "x".repeat(` + strconv.Itoa(nameChars) + `); ` +
			`const o = eval('({["' + k + '"]: function (n) { return n === 0 ? new Error("e") : globalThis.f(n - 1) }})'); ` +
			`const f = globalThis.f = Object.values(o)[0]`,
	}
	rt := mustNew(t, js.Options{})
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			src := "let out; try { " + src + "; out = \"stack \" + f(" + strconv.Itoa(nameDepth) +
				").stack.length } catch (e) { out = \"refused \" + e.name + \": \" + e.message }\n"
			bare, err := goja.New().RunString(src + "out")
			require.NoError(t, err)
			n, ok := strings.CutPrefix(bare.String(), "stack ")
			require.True(t, ok, "on a bare VM: %s", bare)
			got, _ := strconv.Atoi(n)
			require.Greater(t, got, nameDepth*nameChars, "on a bare VM the stack multiplies the name")
			b, err := invoke(t, rt, "board.setVar(\"out\", (() => {"+src+"return out})())")
			if err != nil { // refused as the script is compiled
				assert.Contains(t, err.Error(), "more than 1024")
				return
			}
			out, _ := b.Vars["out"].(string)
			if n, ok := strings.CutPrefix(out, "stack "); ok {
				got, _ := strconv.Atoi(n)
				assert.Less(t, got, (nameDepth+1)*(fnname.MaxChars+100), "the stack stays small")
				return
			}
			assert.True(t, strings.HasPrefix(out, "refused SyntaxError"), out)
		})
	}
}

// The check a derived class with a field that may be named "name" makes
// keeps what legitimate code does: a base constructor that returns the
// same object twice (a registry, a stamp) lets the class define its
// public fields on it again, as plain goja does (a private field put in
// for the check refused the second time).
func TestDerivedClassFieldsKeepTheirMeaning(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	for _, body := range []string{
		`const shared = {}; class B { constructor() { return shared } }; class S extends B { name = 1 }; new S(); new S(); return shared.name`,
		`const shared = {}; class B { constructor() { return shared } }; class S extends B { ["x" + 1] = 2 }; new S(); new S(); return shared.x1`,
	} {
		src := "(function () { try { " + body + " } catch (e) { return e.name + \": \" + e.message } })()"
		bare, err := goja.New().RunString(src)
		require.NoError(t, err)
		b, err := invoke(t, rt, "board.setVar(\"out\", "+src+")")
		require.NoError(t, err)
		assert.Equal(t, bare.String(), fmt.Sprint(b.Vars["out"]), body)
	}
}
