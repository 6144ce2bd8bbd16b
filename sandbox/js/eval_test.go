package js_test

import (
	"context"
	"math"
	"testing"

	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Expressions share pooled VMs, yet nothing one expression does is seen
// by the next: every way of changing a built-in or a global fails or stays
// in the expression's own global object.
func TestEvalPooledIsolation(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{PoolSize: 1})
	eval := func(expr string) (any, error) {
		return rt.Eval(context.Background(), sandbox.Evaluation{Node: "e", Expr: expr, Vars: map[string]any{"v": 1.0}})
	}
	for _, attempt := range []string{
		`(Object.prototype.p = 1)`, `(globalThis.g = 1)`, `(this.t = 1)`, `(Array.prototype.push = null)`,
		`(Math.abs = null)`, `eval("var ev = 1")`, `(function () { sloppy = 1 })()`, `(JSON.parse = null)`,
		`(Date.prototype.x = 1)`, `(String.prototype.trim = null)`, `(RegExp.prototype.exec = null)`,
		`(Function.prototype.call = null)`, `Object.defineProperty(Object.prototype, "d", {value: 1})`,
		`Object.setPrototypeOf(Object.prototype, {q: 1})`, `(Object.getPrototypeOf(globalThis).y = 1)`,
		`(v = 2)`, `delete Array.prototype.map`, `Object.assign(Math, {PI: 3})`,
	} {
		_, _ = eval(attempt)
		got, err := eval(`[({}).p, typeof g, typeof t, typeof [].push, typeof Math.abs, typeof ev, typeof sloppy,
			typeof JSON.parse, new Date(0).x, typeof "".trim, typeof /x/.exec, typeof Function.prototype.call,
			({}).d, ({}).q, typeof y, v, typeof [].map, Math.PI === 3]`)
		require.NoError(t, err, "after %s", attempt)
		assert.Equal(t, []any{nil, "undefined", "undefined", "function", "function", "undefined", "undefined",
			"function", nil, "function", "function", "function", nil, nil, "undefined", 1.0, "function", false}, got,
			"after %s", attempt)
	}
}

// In an expression the built-ins are frozen, yet assigning a property
// that a frozen prototype holds works on the object assigned to, as
// defining it does; the prototype itself keeps its property.
func TestEvalFrozenPrototypes(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	got, err := rt.Eval(context.Background(), sandbox.Evaluation{Node: "e",
		Expr: `[(o => (o.toString = () => "x", String(o)))({}), String({toString: () => "y"}),
			(Object.prototype.toString = () => "z", String({})),
			(o => (o.name = "Mine", String(o)))(new TypeError("m"))]`})
	require.NoError(t, err)
	assert.Equal(t, []any{"x", "y", "[object Object]", "Mine: m"}, got)
}

// A let, const or class that eval or the Function constructor declares in
// the global scope is kept by the VM, beyond the global object: the next
// expression on the same pooled VM must not see it, nor fail to declare
// it again.
func TestEvalLexicalDeclarationsDoNotLeak(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, declare, name2 string
	}{
		{"let through eval", `eval("let leak = 1")`, "leak"},
		{"const through eval", `eval("const leak = 1")`, "leak"},
		{"class through eval", `eval("class leak {}")`, "leak"},
		{"let through Function parameters", `Function("a) {}); let leak = 1; (function (b", "")`, "leak"},
		{"let through nested eval", `eval("eval('let leak = 1')")`, "leak"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt := mustNew(t, js.Options{PoolSize: 1})
			eval := func(expr string) (any, error) {
				return rt.Eval(context.Background(), sandbox.Evaluation{Node: "e", Expr: expr})
			}
			_, _ = eval(tc.declare)
			got, err := eval(`typeof ` + tc.name2)
			require.NoError(t, err)
			assert.Equal(t, "undefined", got)
			_, err = eval(tc.declare)
			require.NoError(t, err, "declaring again")
		})
	}
}

// In an expression globalThis and a top-level this are the expression's
// own global object.
func TestEvalGlobalThisIsOwnGlobal(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{PoolSize: 1})
	got, err := rt.Eval(context.Background(), sandbox.Evaluation{Node: "e",
		Expr: `[globalThis === this, globalThis.v, Function("return this")() === globalThis, (globalThis.w = 2, w)]`,
		Vars: map[string]any{"v": 1.0}})
	require.NoError(t, err)
	assert.Equal(t, []any{true, 1.0, true, 2.0}, got)
	got, err = rt.Eval(context.Background(), sandbox.Evaluation{Node: "e", Expr: `typeof w`})
	require.NoError(t, err)
	assert.Equal(t, "undefined", got)
}

// An expression that reaches vars only by name gets only the vars it
// names, with the same result as one that is given every var (here,
// the same expression made to name globalThis); a var it does not name
// costs it nothing, even one that cannot be made into a script value.
func TestEvalVarsByName(t *testing.T) {
	t.Parallel()
	rt, err := js.New(js.Options{})
	require.NoError(t, err)
	defer rt.Close()
	vars := map[string]any{"tool_pending": true, "count": 4.0, "label": "bug", "__iterations": 3.0,
		"items": []any{1.0, map[string]any{"k": "v"}}, "nested": map[string]any{"a": map[string]any{"b": 2.0}},
		// Vars named as the spread guards cannot hide them.
		"\x00spread": 1.0, "\x00spreadArray": 1.0}
	eval := func(expr string, vars map[string]any) (any, error) {
		return rt.Eval(context.Background(), sandbox.Evaluation{Node: "edge", Expr: expr, Vars: vars})
	}
	for _, expr := range []string{
		`tool_pending == true && __iterations < 10`,
		`count > 3 && label === "bug"`,
		`items.length === 2 && items[1].k === "v" && nested.a.b === 2`,
		`({label}).label + ({missing}).missing`,
		`typeof missing === "undefined" && typeof label`,
		`items.some((x) => x === 1) ? "yes" : "no"`,
		`[count, label, nested]`,
		`({...nested}).a.b + [...items].length`,
	} {
		named, err := eval(expr, vars)
		require.NoError(t, err, expr)
		all, err := eval("((0, globalThis), ("+expr+"))", vars)
		require.NoError(t, err, expr)
		assert.Equal(t, all, named, expr)
	}
	withBad := map[string]any{"ok": true, "bad": math.NaN()}
	v, err := eval(`ok === true`, withBad)
	require.NoError(t, err, "a var the expression does not name is not made")
	assert.Equal(t, true, v)
	_, err = eval(`ok === true && typeof globalThis === "object"`, withBad)
	require.Error(t, err, "an expression that can reach every var gets every var")
}
