package js_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-rt/corral/sandbox/js"
	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
		t.Run(a.name, func(t *testing.T) { checkNameStack(t, rt, nameAttack(a.src)) })
	}
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
			checkNameStack(t, rt, "let out; try { "+src+"; out = \"stack \" + f("+strconv.Itoa(nameDepth)+
				").stack.length } catch (e) { out = \"refused \" + e.name + \": \" + e.message }\nout")
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
