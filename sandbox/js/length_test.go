package js_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shifty is an array-like whose length answers 0 when first read and
// 2^31 after: a guard that read it and then let the built-in read it
// again would check one length and loop over the other.
const shifty = `let reads = 0; const o = {get length() { return reads++ ? 2 ** 31 : 0 }};`

// REF 9.M15 (a guarded built-in reads an array-like's length once)
// Each built-in whose loop or allocation a guard bounds by an array-like's
// length works on the length the guard read, even when reading it runs a
// getter that answers differently the next time: unguarded, Math.max.apply,
// Reflect.apply and sort ended the process with a fatal out of memory, and
// the others ran for minutes in one uninterruptible step (each case runs
// in a child). The script sees the built-in's usual result, its own object
// where the built-in returns its this, and the length read once.
func TestLengthReadOnce(t *testing.T) {
	for name, src := range map[string]string{
		"Function.prototype.apply": `Math.max.apply(null, o)`,
		"Reflect.apply":            `Reflect.apply(Math.max, null, o)`,
		"Reflect.construct":        `Reflect.construct(Array, o).length`,
		"sort":                     `Array.prototype.sort.call(o) === o`,
		"indexOf":                  `Array.prototype.indexOf.call(o, 1)`,
		"fill":                     `Array.prototype.fill.call(o, 0) === o`,
		"reverse":                  `Array.prototype.reverse.call(o) === o`,
		"slice":                    `Array.prototype.slice.call(o).length`,
		"Array.from":               `Array.from(o).length`,
		"a typed array":            `new Uint8Array(o).length`,
	} {
		t.Run(name, func(t *testing.T) {
			if !inBoundedChild(t, 2*time.Minute) {
				return
			}
			rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: 30 * time.Second}})
			require.NoError(t, err)
			defer rt.Close()
			resetPeak()
			b := agent.NewBoard()
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker",
				Script: sandbox.Script{Source: shifty + `board.setVar("r", String(` + src + `)); board.setVar("reads", reads)`}}, b))
			assert.Contains(t, []any{"-Infinity", "0", "-1", "true"}, b.Vars["r"])
			assert.Equal(t, float64(1), b.Vars["reads"], "the length is read once")
			_, peak := rss()
			assert.Less(t, peak, int64(rssBound), "peak RSS")
			next := agent.NewBoard()
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "next",
				Script: sandbox.Script{Source: `board.setVar("ok", Math.max.apply(null, [1, 3, 2]) + [3, 1, 2].sort().indexOf(3))`}}, next))
			assert.Equal(t, float64(5), next.Vars["ok"])
		})
	}
}

// An array-like whose length runs no code is handed to the built-in as it
// is; one whose length is a getter still behaves as an array-like: the
// built-ins read and write its elements, and a method that returns its
// this returns the object itself.
func TestPinnedArrayLikesBehave(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	b := agent.NewBoard()
	require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n",
		Script: sandbox.Script{Source: `
			const o = {0: "b", 1: "a", get length() { return 2 }, get [2]() { return "never" }};
			const out = [];
			out.push(Array.prototype.sort.call(o) === o, o[0] + o[1]);
			out.push(Array.prototype.map.call(o, x => x + x).join());
			out.push(Array.prototype.fill.call(o, "z", 1)[1], Array.from(o).join(""));
			out.push(Math.max.apply(null, {get length() { return 2 }, 0: 4, 1: 9}));
			out.push(new Uint8Array({get length() { return 2 }, 0: 7, 1: 8}).join());
			const p = new Proxy([5, 6], {});
			out.push(Array.prototype.indexOf.call(p, 6), Array.prototype.reverse.call(p) === p);
			board.setVar("out", out);`}}, b))
	assert.Equal(t, []any{true, "ab", "aa,bb", "z", "az", float64(9), "7,8", float64(1), true}, b.Vars["out"])
}

// REF 9.M15 (concat, flat and flatMap read each source's length once)
// concat, flat and flatMap read each source's length when they come to
// it, after the getters of the sources before it ran: a getter that sets
// a later array's length to 2^31, or a flatMap callback that returns such
// an array, is bounded by memory_bytes as a long array is, instead of
// holding the call for minutes in one step (each case runs in a child).
func TestLaterLengthsBounded(t *testing.T) {
	const grow = `const b = [1]; const g = []; Object.defineProperty(g, 0, {get() { b.length = 2 ** 31; return 1 }});`
	for name, src := range map[string]string{
		"concat":  grow + `g.concat(b)`,
		"flat":    grow + `[g, b].flat()`,
		"flatMap": `[1].flatMap(() => { const a = []; a.length = 2 ** 31; return a })`,
	} {
		t.Run(name, func(t *testing.T) {
			if !inBoundedChild(t, 2*time.Minute) {
				return
			}
			rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: 30 * time.Second}})
			require.NoError(t, err)
			defer rt.Close()
			err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker",
				Script: sandbox.Script{Source: src}}, agent.NewBoard())
			sandboxtest.RequireLimit(t, err, sandbox.LimitMemory, "attacker")
			next := agent.NewBoard()
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "next",
				Script: sandbox.Script{Source: `board.setVar("ok", [1].concat([2], 3).flat().length)`}}, next))
			assert.Equal(t, float64(3), next.Vars["ok"])
		})
	}
}

// concat, flat and flatMap give what the language says: holes kept by
// concat and dropped by flat, Symbol.isConcatSpreadable, a subclass's
// species, flat's depth, flatMap's this argument and its errors.
func TestConcatFlatBehave(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	b := agent.NewBoard()
	require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n",
		Script: sandbox.Script{Source: `
			const out = [];
			const holes = [1, , 3].concat([, 5], 6, "s");
			out.push(holes.length, 1 in holes, 3 in holes, holes.join("|"));
			const spread = {length: 2, 0: "a", 1: "b", [Symbol.isConcatSpreadable]: true};
			out.push([0].concat(spread).join(""), [0].concat({length: 1, 0: "x"}).length);
			class Sub extends Array {}
			out.push(Sub.from([1, 2]).concat([3]) instanceof Sub, Sub.from([[1], [2]]).flat() instanceof Sub);
			out.push([1, [2, [3, [4]]]].flat().length, [1, [2, [3, [4]]]].flat(Infinity).join(), [1, , [2, , 3]].flat().join());
			out.push([1, 2].flatMap(function (x, i) { return [x * this.k, i] }, {k: 10}).join());
			try { [1].flatMap(null) } catch (e) { out.push(e instanceof TypeError) }
			out.push(Array.prototype.concat.call("ab", [1]).length);
			board.setVar("out", out);`}}, b))
	assert.Equal(t, []any{float64(7), false, false, "1||3||5|6|s", "0ab", float64(2), true, true,
		float64(3), "1,2,3,4", "1,2,3", "10,0,20,1", true, float64(2)}, b.Vars["out"])
}

// A guard converts the count it checks once and hands the built-in the
// converted value: BigInt.asUintN's bits, read through a valueOf that
// answered 1 to the check and 2^34 after, built 4 GiB in one step (the
// case runs in a child).
func TestCountConvertedOnce(t *testing.T) {
	t.Run("BigInt.asUintN", func(t *testing.T) {
		if !inBoundedChild(t, 2*time.Minute) {
			return
		}
		rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: 30 * time.Second}})
		require.NoError(t, err)
		defer rt.Close()
		resetPeak()
		b := agent.NewBoard()
		require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker",
			Script: sandbox.Script{Source: `// BigInt
				let reads = 0; const bits = {valueOf() { return reads++ ? 2 ** 34 : 1 }};
				board.setVar("r", String(BigInt.asUintN(bits, -1n)) + " " + reads)`}}, b))
		assert.Equal(t, "1 1", b.Vars["r"])
		_, peak := rss()
		assert.Less(t, peak, int64(rssBound), "peak RSS")
	})
}
