package bigop

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vmWithHelper is a VM with the helper as Global and a refusal that
// throws "refused".
func vmWithHelper(t testing.TB) *goja.Runtime {
	vm := goja.New()
	h, err := Install(vm, func() int64 { return MaxBits(64 << 20) }, func() { panic(vm.ToValue("refused")) })
	require.NoError(t, err)
	require.NoError(t, vm.GlobalObject().Set(Global, h))
	return vm
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
	want := goja.New()
	plain, err := want.RunProgram(compile(t, src, false))
	require.NoError(t, err)
	got, err := vmWithHelper(t).RunProgram(compile(t, src, true))
	require.NoError(t, err)
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
	src := `(function () { let x = 1, y = 0; for (let i = 0; i < 1000; i++) { x = (x * 1.0001) % 1e6; y += (i << 2) + i ** 2 } return x + y })`
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
