package js_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/js/internal/fnname"
	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frameName is the function name of the first frame of stack.
var frameName = regexp.MustCompile(`\n\s*at (\S+) \(`)

// REF 9.M20. A shorthand property with a default in a pattern ({x = f} = o, in a
// declaration, a parameter or an assignment) names its function after
// the binding at compile time; the binding's identifier is held by value
// (ast.PropertyShort), where a walk of pointers alone does not see it, and
// a later use needs no identifier either ({x} is shorthand too).
func TestShorthandDefaultNamesAreBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", nameChars) // the name s holds
	body := `function (n) { return n === 0 ? new Error("e") : g(n - 1) }`
	rt := mustNew(t, js.Options{})
	for name, attack := range map[string]string{
		"const":      `const {` + long + ` = ` + body + `} = {}; g = Object.values({` + long + `})[0]`,
		"parameter":  `const mk = ({` + long + ` = ` + body + `}) => ({` + long + `}); g = Object.values(mk({}))[0]`,
		"assignment": `({` + long + ` = ` + body + `} = {}); g = globalThis[s]`,
		"catch":      `try { throw {} } catch ({` + long + ` = ` + body + `}) { g = Object.values({` + long + `})[0] }`,
		"for of":     `for (const {` + long + ` = ` + body + `} of [{}]) g = Object.values({` + long + `})[0]`,
	} {
		t.Run(name, func(t *testing.T) { checkNameStack(t, rt, nameAttack(attack)) })
	}
	// eval takes source built at run time: the name is as long as the
	// budget allows
	b, err := invoke(t, rt, `"use strict"; const n = "x".repeat(100000); `+
		`const f = eval("const {" + n + " = () => new Error('e')} = {}; ({" + n + "})")[n]; board.setVar("out", f().stack)`)
	if err == nil {
		stack, _ := b.Vars["out"].(string)
		m := frameName.FindStringSubmatch(stack)
		require.NotNil(t, m, stack[:min(len(stack), 200)])
		assert.LessOrEqual(t, len(m[1]), fnname.MaxChars, "the frame's name")
	}
}

// REF 9.M20. A BigInt literal key in hexadecimal names its function with its decimal
// digits, about 1.2 times as many as the literal has characters: they are
// what is measured.
func TestHexBigIntKeyNamesAreBounded(t *testing.T) {
	t.Parallel()
	hex := "0x" + strings.Repeat("f", fnname.MaxChars-3) + "n" // MaxChars characters
	rt := mustNew(t, js.Options{})
	for name, src := range map[string]string{
		"method":       `const o = {` + hex + `() { return new Error("e") }}; out = Object.values(o)[0]().stack`,
		"value":        `const o = {` + hex + `: () => new Error("e")}; out = Object.values(o)[0]().stack`,
		"class method": `class C { ` + hex + `() { return new Error("e") } }; out = Object.getOwnPropertyNames(C.prototype).map(k => C.prototype[k]).find(f => f !== C)().stack`,
		"class field":  `class C { ` + hex + ` = () => new Error("e") }; out = Object.values(new C())[0]().stack`,
	} {
		t.Run(name, func(t *testing.T) {
			v, err := goja.New().RunString(`let out; ` + src + `; out`)
			require.NoError(t, err)
			m := frameName.FindStringSubmatch(v.String())
			require.NotNil(t, m)
			require.Greater(t, len(m[1]), fnname.MaxChars, "on a bare VM the name is the decimal digits")
			b, err := invoke(t, rt, `let out; `+src+`; board.setVar("out", out)`)
			if err != nil {
				assert.Contains(t, err.Error(), "a name of")
				return
			}
			m = frameName.FindStringSubmatch(b.Vars["out"].(string))
			require.NotNil(t, m)
			assert.LessOrEqual(t, len(m[1]), fnname.MaxChars, "the frame's name")
		})
	}
}

// REF 9.M20. A private method's compile-time name is "#" and its identifier, one
// character more than the identifier, which counts.
func TestPrivateNamesAreBounded(t *testing.T) {
	t.Parallel()
	p := strings.Repeat("p", fnname.MaxChars)
	rt := mustNew(t, js.Options{})
	b, err := invoke(t, rt, `class C { static #`+p+`() { return new Error("e") } static m() { return C.#`+p+`() } }; board.setVar("out", C.m().stack)`)
	if err != nil {
		return // refused
	}
	m := frameName.FindStringSubmatch(b.Vars["out"].(string))
	require.NotNil(t, m)
	assert.LessOrEqual(t, len(m[1]), fnname.MaxChars, "the frame's name")
}

// sameAsBare runs src (which sets out) on a bare goja VM and in the
// sandbox, and wants the same out.
func sameAsBare(t *testing.T, rt *js.Runtime, src string) {
	t.Helper()
	v, err := goja.New().RunString(`(function () { let out; ` + src + `; return out })()`)
	require.NoError(t, err)
	b, err := invoke(t, rt, `board.setVar("out", (function () { let out; `+src+`; return String(out) })())`)
	require.NoError(t, err)
	assert.Equal(t, v.String(), b.Vars["out"], src)
}

// A derived class's field with a constant computed key keeps the name
// goja gives its anonymous function by that key (a float, a negative
// number, a BigInt, a boolean, a concatenation with a number): the check
// passes such a key by, as it cannot be "name".
func TestDerivedFieldConstantKeysKeepNames(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	for _, key := range []string{"1.5", "-1", "1n", `"a" + 1.5`, "1e21", "!0"} {
		sameAsBare(t, rt, `class A {}; class S extends A { [`+key+`] = function () {} }; out = Object.values(new S())[0].name`)
	}
}

// A proxy of a function without a defineProperty or deleteProperty trap
// gets the guarded Reflect's as a trap, unless its target is a proxy
// (which has its own): a proxy with a trap checks its invariants against
// its target's own property, which would run a target proxy's
// getOwnPropertyDescriptor trap where the language runs none.
func TestProxyDefaultTrapsRunNoOtherTrap(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	sameAsBare(t, rt, `let n = 0; const inner = new Proxy(function () {}, {getOwnPropertyDescriptor(t, k) { n++; return Reflect.getOwnPropertyDescriptor(t, k) }}); `+
		`const outer = new Proxy(inner, {}); Object.defineProperty(outer, "x", {value: 1, configurable: true}); outer.y = 2; delete outer.x; out = n`)
}

// The built-ins the sandbox wraps answer to a name with the attributes of
// every other built-in's in the sandbox's frozen realm (not enumerable;
// the wrapped ones had an enumerable name).
func TestWrappedBuiltinNamesKeepTheirAttributes(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	attrs := func(f string) any {
		b, err := invoke(t, rt, `const d = Object.getOwnPropertyDescriptor(`+f+`, "name"); `+
			`board.setVar("out", [d.enumerable, d.configurable, d.writable, Object.keys(`+f+`).length].join())`)
		require.NoError(t, err)
		return b.Vars["out"]
	}
	want := attrs("Math.max")
	assert.Equal(t, "false,false,false,0", want)
	for _, f := range []string{"Function.prototype.call", "Function.prototype.bind", "Object.defineProperty", "Set.prototype.union"} {
		assert.Equal(t, want, attrs(f), f)
	}
}

// A derived class whose base returns a function (a callable instance)
// keeps fields whose key is a constant other than "name": only a key that
// may be "name" is checked.
func TestDerivedFieldsOnFunctionsWithOtherConstantKeys(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	sameAsBare(t, rt, `class B { constructor() { return function () {} } }; class S extends B { ["x"] = 1; [0] = 2; ["a" + "b"] = 3 }; `+
		`const s = new S(); out = [typeof s, s.x, s[0], s.ab].join()`)
}

// REF 9.M20. The bound is in characters (MaxChars), not in the bytes of a name's
// internal form (two a character and two more for a name with a
// character past ASCII): a name of 600 such characters passes.
func TestNonASCIINamesWithinTheBound(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	n := strings.Repeat("ж", 600)
	b, err := invoke(t, rt, `function `+n+`() {}; const o = {"`+n+`"() {}}; board.setVar("out", `+n+`.name.length + Object.keys(o)[0].length)`)
	require.NoError(t, err)
	assert.Equal(t, 1200.0, b.Vars["out"])
}
