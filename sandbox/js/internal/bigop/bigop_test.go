package bigop

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vmWithHelper is a VM with the helper as Global and a refusal that
// throws "refused".
func vmWithHelper(t testing.TB) *goja.Runtime {
	vm := goja.New()
	h, err := Install(vm, func() int64 { return MaxBits(64 << 20) }, func() int64 { return 32 << 20 },
		func() { panic(vm.ToValue("refused")) })
	require.NoError(t, err)
	require.NoError(t, vm.GlobalObject().Set(Global, h))
	return vm
}

// both runs src plain in a VM of its own and rewritten in a VM with the
// helper, and returns what each gave.
func both(t *testing.T, src string) (plain, rewritten goja.Value) {
	t.Helper()
	plain, err := goja.New().RunProgram(compile(t, src, false))
	require.NoError(t, err)
	rewritten, err = vmWithHelper(t).RunProgram(compile(t, src, true))
	require.NoError(t, err)
	return plain, rewritten
}

func compile(t testing.TB, src string, rewrite bool) *goja.Program {
	prg, err := parser.ParseFile(nil, "t", src, 0)
	require.NoError(t, err)
	if rewrite {
		require.NoError(t, Rewrite(prg, true))
	}
	p, err := goja.CompileAST(prg, false)
	require.NoError(t, err)
	return p
}

// The rewritten operators give what the operators give, for numbers,
// strings, objects with valueOf and BigInts, evaluate a compound
// assignment's target once, and keep errors (mixing a BigInt and a
// number) as they were.
func TestRewriteKeepsMeaning(t *testing.T) {
	src := `
	const log = [];
	const o = {get p() { log.push("get"); return this._p }, set p(v) { log.push("set"); this._p = v }, _p: 3n};
	const key = {toString() { log.push("key"); return "p" }};
	const r = [6 * 7, 2 ** 10, 1 << 4, -16 >> 2, "3" * "4", ({valueOf() { return 5 }}) * 2, 1 ** NaN,
		String(3n ** 5n), String(7n * 6n), String(1n << 70n), String(-(2n ** 70n) >> 3n), String(5n >> -2n)];
	o[key] **= 2n; o.p *= 2n;
	let x = 3; x <<= 2; x **= 2;
	let mixed; try { 1n * 1 } catch (e) { mixed = e.name }
	JSON.stringify([r, String(o._p), x, log, mixed]);`
	plain, got := both(t, src)
	// goja converts the key of o[key] **= y twice; the rewrite once, as
	// the language says.
	assert.Equal(t, strings.Replace(plain.String(), `"key","get","key"`, `"key","get"`, 1), got.String())
}

// A BigInt result past MaxBits is refused before it is computed, quickly.
func TestRewriteRefusesLargeResults(t *testing.T) {
	vm := vmWithHelper(t)
	for _, src := range []string{
		`1n << (2n ** 34n)`, `7n ** 80000000n`, `let x = 3n; for (;;) x *= x`, `1n >> -(2n ** 40n)`,
		`let y = 2n; y **= 2000000n`, `const o = {v: 5n}; o["v"] <<= 10000000n`,
	} {
		start := time.Now()
		_, err := vm.RunProgram(compile(t, src, true))
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), "refused", src)
		t.Logf("%s: %v", src, time.Since(start))
	}
	assert.False(t, TooLarge(1, big.NewInt(-1), big.NewInt(1<<40), 64))
	assert.True(t, TooLarge(0, new(big.Int).Lsh(big.NewInt(1), 40), new(big.Int).Lsh(big.NewInt(1), 40), 64))
}

// BenchmarkNumberArithmetic measures what the rewrite costs plain number
// arithmetic: a loop of *, ** and << over numbers, rewritten and not, one
// of each per iteration in the same VM. ratio is rewritten / plain.
func BenchmarkNumberArithmetic(b *testing.B) {
	alternate(b, `(function () { let x = 1, y = 0; for (let i = 0; i < 1000; i++) { x = (x * 1.0001) % 1e6; y += (i << 2) + i ** 2 } return x + y })`)
}

// alternate runs src, a function expression, rewritten and plain in turn
// in one VM, and reports ratio (rewritten / plain) and plain-ns/op.
func alternate(b *testing.B, src string) {
	vm := vmWithHelper(b)
	run := func(p *goja.Program) goja.Callable {
		v, err := vm.RunProgram(p)
		require.NoError(b, err)
		f, _ := goja.AssertFunction(v)
		return f
	}
	plain, rewritten := run(compile(b, src, false)), run(compile(b, src, true))
	var tPlain, tRewritten time.Duration
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		_, _ = plain(goja.Undefined())
		t1 := time.Now()
		_, _ = rewritten(goja.Undefined())
		tPlain += t1.Sub(t0)
		tRewritten += time.Since(t1)
	}
	b.ReportMetric(float64(tRewritten)/float64(tPlain), "ratio")
	b.ReportMetric(float64(tPlain.Nanoseconds())/float64(b.N), "plain-ns/op")
}

// The rewritten concatenations give what + and template literals give:
// numbers, strings, BigInts, objects converted by valueOf, toString and
// Symbol.toPrimitive (a Date by its string), in the order the language
// converts them; a compound assignment evaluates its target once; tagged
// templates are left alone; the errors are the same kinds.
func TestRewriteKeepsConcatenation(t *testing.T) {
	src := `
	const log = [];
	const v = (name, val) => ({valueOf() { log.push(name + ".valueOf"); return val }, toString() { log.push(name + ".toString"); return "T" + name }});
	const ex = {[Symbol.toPrimitive](hint) { log.push("hint:" + hint); return "P" }};
	const d = new Date(0), a = "ab", b = "cd", n = 4, m = 5.5, big = 10n, nul = null, und = undefined, arr = [1, 2], fn = function f() {};
	const r = [a + b, n + m, a + n, n + a, String(big + big), a + big, a + nul, nul + n, und + a, a + und, arr + a, a + arr,
		v("x", 1) + v("y", 2), v("x", "s") + a, a + v("y", 3), ex + a, a + ex, (d + a).length > 10, fn + a === "function f() {}" + a,
		` + "`${a}-${n}-${v('t', 7)}-${arr}`" + `, ` + "`${a}${b}`" + `, ` + "`${ex}${ex}`" + `];
	const o = {get p() { log.push("get"); return this._p }, set p(x) { log.push("set"); this._p = x }, _p: "o"};
	const key = {toString() { log.push("key"); return "p" }};
	o[key] += a; o.p += b; let s = "s"; s += s; s += n; let k = 1; k += n;
	const tag = (strs, ...subs) => strs.raw.join("|") + subs.length;
	const errs = [];
	for (const f of [() => Symbol() + a, () => a + Symbol(), () => 1n + n, () => ({valueOf: 1, toString: 1}) + a,
		() => ({[Symbol.toPrimitive]: 1}) + a, () => ({[Symbol.toPrimitive]() { return {} }}) + a, () => ` + "`${a}${Symbol()}`" + `]) {
		try { f(); errs.push("none") } catch (e) { errs.push(e.name) }
	}
	JSON.stringify([r, o._p, s, k, tag` + "`x${a}\\n${b}`" + `, errs, log]);`
	plain, got := both(t, src)
	// goja converts the key of o[key] += y twice; the rewrite once, as
	// the language says.
	assert.Equal(t, strings.Replace(plain.String(), `"key","get","key"`, `"key","get"`, 1), got.String())
}

// A concatenation whose result would pass the longest string allowed is
// refused before the copy, however the doubling is written; one with a
// bounded operand is not rewritten, and a tagged template is left alone.
func TestRewriteRefusesLongConcatenations(t *testing.T) {
	for _, src := range []string{
		`let s = "x"; for (;;) s += s`,
		`let s = "x"; for (;;) s = s + s`,
		"let s = 'x'; for (;;) s = `${s}${s}`",
		"let s = 'x'; for (;;) s = `<${s}|${s}>`",
		`const o = {s: "x"}; for (;;) o.s += o.s`,
		`const o = {s: "x"}; for (;;) o["s"] += o.s`,
		`let s = "x"; const w = {valueOf() { return s }}; for (;;) s = w + s`,
		`let s = "x"; const w = {[Symbol.toPrimitive]() { return s }}; for (;;) s = s + w`,
		`let s = "x"; for (;;) s = "a" + s + s`,
		`let s = "x"; for (;;) s = (1, s) + (0 ? 1 : s)`,
		`function f(s) { return f(s + s) } f("x")`,
	} {
		vm := vmWithHelper(t) // at most 32 Mi characters
		start := time.Now()
		_, err := vm.RunProgram(compile(t, src, true))
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), "refused", src)
		t.Logf("%s: %v", src, time.Since(start))
	}
	for src, want := range map[string]int64{
		`let s = ""; for (let i = 0; i < 5000; i++) s += "x"; s.length`:                      5000,
		`let s = "x".repeat(40000); s = s + 1 + s; s.length`:                                 80001,
		`let n = 0; for (let i = 0; i < 100; i++) n += i * 2; n`:                             9900,
		"let s = 'y'.repeat(30000); `${s}${1 + 2}`.length":                                   30001,
		"const tag = (strs, ...subs) => subs.length; let s = 'x'.repeat(1e6); tag`${s}${s}`": 2,
	} {
		got, err := vmWithHelper(t).RunProgram(compile(t, src, true))
		require.NoError(t, err, src)
		assert.Equal(t, want, got.ToInteger(), src)
	}
}

// Which expressions the rewrite leaves alone: a concatenation with a
// bounded operand is not a helper call.
func TestBounded(t *testing.T) {
	for src, want := range map[string]bool{
		`a + 1`: false, `1 + a`: false, `a + "x"`: false, "a + `x`": false, `a + -b`: false, `a + (b * c)`: false,
		`a + typeof b`: false, `a + (b < c)`: false, `a + (b ? 1 : 2)`: false, `a + (b, 3)`: false, `a + (b -= 1)`: false,
		`a + b`: true, `a + (b + 1)`: true, `a + (b ? c : 1)`: true, `a + (b || 1)`: true, "a + `${b}`": true,
		`a + (b = c)`: true, `a + b.c`: true, `a + f()`: true, `a + /x/`: true, `a + (b += 1)`: true,
		"`${a}${b}`": true, "`${a}${1}`": false, "`${a}`": false, "t`${a}${b}`": false,
	} {
		prg, err := parser.ParseFile(nil, "t", src, 0)
		require.NoError(t, err)
		require.NoError(t, Rewrite(prg, false))
		stmt := prg.Body[0].(*ast.ExpressionStatement)
		_, isCall := stmt.Expression.(*ast.CallExpression)
		if _, tagged := stmt.Expression.(*ast.TemplateLiteral); tagged && want {
			t.Errorf("%s: not rewritten", src)
			continue
		}
		assert.Equal(t, want, isCall, src)
	}
}

// BenchmarkConcatenation measures what the rewrite costs a loop of +=
// over numbers and over short strings, rewritten and not, in the same VM.
// ratio is rewritten / plain.
func BenchmarkConcatenation(b *testing.B) {
	for name, src := range map[string]string{
		"numbers": `(function () { const a = [1, 2, 3, 4]; let s = 0; for (let i = 0; i < 1000; i++) s += a[i & 3]; return s })`,
		"strings": `(function () { const a = ["a", "b"]; let s = ""; for (let i = 0; i < 1000; i++) s += a[i & 1]; return s.length })`,
	} {
		b.Run(name, func(b *testing.B) { alternate(b, src) })

	}
}

// A compound assignment to a private field or a super property is
// rewritten too: its object and key are evaluated once, its getter read
// once and its setter written once, as the operator does.
func TestRewriteCompoundPrivateAndSuper(t *testing.T) {
	src := `
	const log = [];
	const a = "a", b = "b";
	class Base { get p() { log.push("get p"); return this._p } set p(v) { log.push("set p"); this._p = v } }
	class C extends Base {
		#s = "s"; #n = 3n;
		run(k) {
			this._p = "p";
			this.#s += a; this.#s += b; this.#n *= 4n; this.#n <<= 2n;
			super.p += a;
			super[k()] += b;
			const self = () => { log.push("self"); return this };
			self().#s += a;
			return [this.#s, String(this.#n), this._p];
		}
	}
	const k = () => { log.push("key"); return {toString() { log.push("toString"); return "p" }} };
	JSON.stringify([new C().run(k), log]);`
	plain, got := both(t, src)
	// goja converts the key of super[k] += y twice; the rewrite once, as
	// the language says.
	assert.Equal(t, strings.Replace(plain.String(), `"toString","get p","toString","set p"`, `"toString","get p","set p"`, 1), got.String())
	assert.Contains(t, got.String(), `["saba","48","pab"]`)
}

// delete keeps its meaning: properties of objects, arrays and functions
// are deleted, a key is converted once, a property that cannot be deleted
// is false in sloppy code and a TypeError in strict code, and a proxy's
// trap sees the converted key; only a function's own name stays.
func TestRewriteKeepsDelete(t *testing.T) {
	src := `
	const log = [];
	const key = (k) => ({toString() { log.push("key " + k); return k }});
	const o = {a: 1, b: 2, name: "n"}, arr = [1, 2, 3], f = function g() {};
	f.x = 1;
	const p = new Proxy({z: 1}, {deleteProperty(t, k) { log.push("trap " + typeof k + " " + k); return delete t[k] }});
	const r = [delete o.a, delete o[key("b")], delete o.name, delete arr[1], 1 in arr, delete f[key("x")], "x" in f,
		delete Math.PI, delete p[key("z")], delete o.missing, delete o?.b,
		(function () { "use strict"; try { return delete Object.prototype } catch (e) { return e.name } })(),
		Object.keys(o).join()];
	let named; try { delete f.name; named = "deleted" } catch (e) { named = e.name }
	let computed; try { delete f[key("name")]; computed = "deleted" } catch (e) { computed = e.name }
	JSON.stringify([r, log, named, computed, f.name]);`
	plain, got := both(t, src)
	want := strings.Replace(plain.String(), `"deleted","deleted",""]`, `"TypeError","TypeError","g"]`, 1)
	assert.Equal(t, want, got.String())
	assert.Contains(t, got.String(), `"key name"`, "the key is converted once, before the refusal")

	prg, err := parser.ParseFile(nil, "t", "delete o?.[k]", 0)
	require.NoError(t, err)
	assert.ErrorIs(t, Rewrite(prg, false), ErrDelete)
}

// A derived class with a field that may be named "name" defines its
// fields on an ordinary instance as before, in order, and refuses to
// define that field on a function a base constructor returned; a class
// with other fields is left alone. Anonymous functions keep the names
// the fields give them, computed keys of functions their meaning.
func TestRewriteGuardsFields(t *testing.T) {
	src := `
	const log = [];
	class Base { constructor(o) { return o } }
	class A extends Base { x = log.push("x"); name = "a"; ["k" + 1] = log.push("k") }
	class Other extends Base { x = 1 }
	const a = new A({});
	const same = {}; new Other(same); new Other(same); class Twice extends Base { name = 1; ["y"] = 2 }; new Twice(same); new Twice(same);
	class Named extends Base { name = () => 1; ["n" + 1] = function () {}; static ["s" + 1] = () => 2 }
	const named = new Named({}), key = "m" + 1, lit = {[key]: () => 1, [key + 2]() {}, ["c"]: class {}};
	log.push(named.name.name, named.n1.name, Named.s1.name, lit.m1.name, lit.m12.name, lit.c.name, same.name + same.y);
	let onFunction; try { new A(function f() {}); onFunction = "defined" } catch (e) { onFunction = e.name }
	const f = function g() {}; new Other(f);
	JSON.stringify([a.name, a.k1, a.x, log, onFunction, f.x, f.name]);`
	plain, got := both(t, src)
	// refused as the field that may be named "name" is initialized: the
	// second instance gets x, and not k
	want := strings.Replace(plain.String(), `"x","k"],"defined"`, `"x"],"TypeError"`, 1)
	assert.Equal(t, want, got.String())
	assert.Contains(t, plain.String(), `"defined"`)
}
