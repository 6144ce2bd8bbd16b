package js

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sameValue is a script function comparing two values as a script can
// see them: types, numbers with Object.is (so -0), prototypes, own keys in
// order, property attributes and frozenness, all the way down.
const sameValue = `(function same(a, b) {
	if (typeof a !== typeof b) return false
	if (a === null || typeof a !== "object") return Object.is(a, b)
	if (Array.isArray(a) !== Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
	if (Object.isFrozen(a) !== Object.isFrozen(b) || Object.isExtensible(a) !== Object.isExtensible(b)) return false
	const ka = Reflect.ownKeys(a), kb = Reflect.ownKeys(b)
	if (ka.length !== kb.length) return false
	for (let i = 0; i < ka.length; i++) {
		if (ka[i] !== kb[i]) return false
		const da = Object.getOwnPropertyDescriptor(a, ka[i]), db = Object.getOwnPropertyDescriptor(b, kb[i])
		if (da.writable !== db.writable || da.enumerable !== db.enumerable || da.configurable !== db.configurable) return false
		if (!same(da.value, db.value)) return false
	}
	return true
})`

// treeChecker compares fromGoTree with the JSON route in one VM.
type treeChecker struct {
	c    *call
	same goja.Callable
}

func newTreeChecker(t testing.TB) *treeChecker {
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	c, err := rt.fresh("")
	require.NoError(t, err)
	c.bind(context.Background(), "tree", "n", rt.Limits())
	t.Cleanup(c.cancel)
	c.installGlobals(sandbox.Invocation{Node: "n", Board: *agent.NewBoard()}, true)
	v, err := c.vm.RunString(sameValue)
	require.NoError(t, err)
	same, ok := goja.AssertFunction(v)
	require.True(t, ok)
	return &treeChecker{c: c, same: same}
}

// check reports whether v, made directly, is the value the JSON route
// makes, frozen or not; handled is false when fromGoTree left v to the
// JSON route.
func (tc *treeChecker) check(t testing.TB, v any) (handled bool) {
	for _, frozen := range []bool{false, true} {
		var direct, viaJSON goja.Value
		ex := tc.c.vm.Try(func() {
			direct, handled = tc.c.fromGoTree(v, math.MaxInt64, "test", frozen)
			if handled {
				viaJSON = tc.c.fromGoJSON(v, math.MaxInt64, "test")
				if frozen {
					viaJSON = tc.c.deepFreeze(viaJSON)
				}
			}
		})
		require.Nil(t, ex)
		if !handled {
			return false
		}
		res, err := tc.same(goja.Undefined(), direct, viaJSON)
		require.NoError(t, err)
		if !res.ToBoolean() {
			data, _ := json.Marshal(v)
			t.Fatalf("made directly, %s differs from its JSON route (frozen %v)", data, frozen)
		}
	}
	return true
}

// Board values and configs made directly into script values are the
// values JSON text would give, key order, -0 and frozenness included;
// what the direct route cannot make is left to the JSON route.
func TestFromGoTree(t *testing.T) {
	tc := newTreeChecker(t)
	for _, v := range []any{
		map[string]any{},
		[]any{},
		map[string]any{"b": 1.0, "a": "x", "10": true, "2": nil, "__proto__": map[string]any{"p": 1.0}},
		map[string]any{"neg": math.Copysign(0, -1), "big": 1e21, "small": 5e-324, "int": 42.0, "frac": 0.1},
		[]any{"a\u2028b", "<&>", "é", "", []any{[]any{}}, map[string]any{"z": []any{1.0, "2"}}},
		map[string]any{"constructor": "c", "toString": "t", "hasOwnProperty": 1.0, "length": 3.0},
	} {
		assert.True(t, tc.check(t, v), "%v is made directly", v)
	}
	deep := any("leaf")
	for range maxTreeDepth + 2 {
		deep = []any{deep}
	}
	for _, v := range []any{
		map[string]any{"n": math.NaN()},
		[]any{math.Inf(1)},
		map[string]any{"bad": "\xff"},
		map[string]any{"\xff": 1.0},
		map[string]any{"m": map[string]any(nil)},
		[]any{[]any(nil)},
		map[string]any{"i": 1},
		[]any{json.Number("1")},
		deep,
	} {
		assert.False(t, tc.check(t, v), "%v is left to the JSON route", v)
	}
}

// FuzzFromGoTree: any JSON document, decoded as the board holds values,
// made directly is the value its JSON route makes.
func FuzzFromGoTree(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"b":1,"a":[true,null,"x"],"10":-0}`, `{"__proto__":{"x":1}}`,
		`[1e300,-1e-300,0.1,"\u2028",{"":""}]`, `{"a":{"b":{"c":[[[]]]}}}`} {
		f.Add([]byte(s))
	}
	tc := newTreeChecker(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		tc.check(t, v)
	})
}
