package js

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pollute tries every way a script might leave something for the next
// invocation on the same VM: globals, built-in prototypes (also the ones
// no global names), the frozen global object and the API objects, the
// functions of those objects, its own wrapper function, the config.
const pollute = `
	globalThis.leaked = 1; leakedImplicit = 2; var leakedVar = 3;
	globalThis.globalThis = "mine";
	const tries = [
		() => { Object.prototype.polluted = 1 },
		() => { Array.prototype.push = () => "hijacked" },
		() => { Object.getPrototypeOf([][Symbol.iterator]()).polluted = 1 },
		() => { Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())).polluted = 1 },
		() => { Object.getPrototypeOf(function* () {}).polluted = 1 },
		() => { Object.getPrototypeOf(function* () {}).prototype.polluted = 1 },
		() => { Object.getPrototypeOf(async function () {}).polluted = 1 },
		() => { Object.getPrototypeOf(""[Symbol.iterator]()).polluted = 1 },
		() => { Object.getPrototypeOf(new Map()[Symbol.iterator]()).polluted = 1 },
		() => { Object.getPrototypeOf(globalThis).polluted = 1 },
		() => { Object.getPrototypeOf(Object.getPrototypeOf(globalThis)).polluted = 1 },
		() => { Object.defineProperty(Object.prototype, "polluted", {value: 1}) },
		() => { Object.setPrototypeOf(Object.prototype, {polluted: 1}) },
		() => { Error.prototype.name = "Hijacked"; Error.prototype.toString = () => "hijacked" },
		() => { board.getVar.polluted = 1 }, () => { host.now.polluted = 1 }, () => { board.polluted = 1 },
		() => { console.log.polluted = 1 }, () => { run.get_run_id.polluted = 1 },
		() => { config.polluted = 1 }, () => { Math.polluted = 1 }, () => { JSON.parse = () => 1 },
	];
	arguments.callee.polluted = 1;
	let refused = 0;
	for (const t of tries) { try { t() } catch (e) { refused++ } }
	board.setVar("secret", "first");
	board.setVar("refused", refused);`

// inspect reports what the previous invocation may have left.
const inspect = `
	const P = Object.getPrototypeOf;
	board.setVar("seen", [
		typeof leaked, typeof leakedImplicit, typeof leakedVar, globalThis === this,
		({}).polluted, [1].push(2), P([][Symbol.iterator]()).polluted, P(P([][Symbol.iterator]())).polluted,
		P(function* () {}).polluted, P(function* () {}).prototype.polluted, P(async function () {}).polluted,
		P(""[Symbol.iterator]()).polluted, P(new Map()[Symbol.iterator]()).polluted,
		P(globalThis).polluted, P(P(globalThis)).polluted, String(new Error("e")),
		board.getVar.polluted, host.now.polluted, board.polluted, console.log.polluted,
		run.get_run_id.polluted, config.polluted, Math.polluted, JSON.parse("2"), arguments.callee.polluted,
		board.getVar("secret"), Object.keys(board.getVars()).sort().join(","), run.get_run_id(), node.id(),
	]);`

// One invocation cannot change what the next one on the same pooled VM
// sees, not even when the next one belongs to another session (another
// board, host and run): the VM is reused (a pool of one), its built-ins
// frozen, and every invocation gets a new global object.
func TestPooledVMIsolation(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	first := agent.NewBoard()
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "a", Script: sandbox.Script{Source: pollute}, ABI: hostabi.NewDispatcher(hostabi.Config{Host: sandboxtest.NewHost(1), Node: "a"}), Run: sandbox.RunInfo{RunID: "r1"},
		Config: map[string]any{"k": 1.0}}, first)
	require.NoError(t, err)
	vm := pooled(t, rt)
	second := agent.NewBoard()
	second.Vars["own"] = true
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "b", Script: sandbox.Script{Source: inspect}, ABI: hostabi.NewDispatcher(hostabi.Config{Host: sandboxtest.NewHost(2), Node: "b"}), Run: sandbox.RunInfo{RunID: "r2"}}, second)
	require.NoError(t, err)
	assert.Same(t, vm, pooled(t, rt), "the second invocation ran on the same VM")
	assert.Equal(t, []any{
		"undefined", "undefined", "undefined", true,
		nil, 2.0, nil, nil,
		nil, nil, nil,
		nil, nil,
		nil, nil, "Error: e",
		nil, nil, nil, nil,
		nil, nil, nil, 2.0, nil,
		nil, "own", "r2", "b",
	}, second.Vars["seen"])
	assert.Equal(t, "first", first.Vars["secret"])
	assert.Positive(t, first.Vars["refused"], "defining on a frozen built-in throws")
}

// A VM is not reused after eval or Function ran code (a global let,
// const or class would outlive the global object), nor after a stop.
func TestPooledVMDroppedAfterCodeOrStop(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"eval":     `eval("let kept = 1")`,
		"Function": `Function("return 1")()`,
		"signal":   `signal.done()`,
		"limit":    `for (;;) {}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rt, err := New(Options{PoolSize: 1, Limits: sandbox.Limits{WallTime: 50e6}})
			require.NoError(t, err)
			defer rt.Close()
			inv := sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `1`}, Board: *agent.NewBoard()}
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, inv, nil))
			vm := pooled(t, rt)
			inv.Script.Source = src
			_ = sandbox.InvokeOn(context.Background(), rt, inv, nil)
			assert.Zero(t, rt.realms.len(), "the VM went back to the pool")
			inv.Script.Source = `1`
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, inv, nil))
			assert.NotSame(t, vm, pooled(t, rt))
		})
	}
}

// pooled returns the VM waiting in rt's pool (of one), leaving it there.
func pooled(t *testing.T, rt *Runtime) *call {
	t.Helper()
	require.Equal(t, 1, rt.realms.len())
	c := rt.realms.get("")
	rt.realms.put(c)
	return c
}

// An expression cannot change the built-ins no global names (iterator and
// generator prototypes) for the next expression on the same VM.
func TestPooledVMIsolationEval(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	eval := func(expr string) any {
		v, err := rt.Eval(context.Background(), sandbox.Evaluation{Node: "e", Expr: expr})
		require.NoError(t, err)
		return v
	}
	eval(`(Object.getPrototypeOf([][Symbol.iterator]()).x = 1, Object.getPrototypeOf(function* () {}).x = 1, true)`)
	vm := pooled(t, rt)
	assert.Equal(t, []any{nil, nil},
		eval(`[Object.getPrototypeOf([][Symbol.iterator]()).x, Object.getPrototypeOf(function* () {}).x]`))
	assert.Same(t, vm, pooled(t, rt))
}

// A script run again on the same VM reuses its function, yet sees the
// globals of the new invocation (its config, its board, a global object
// without what the last run left) and nothing left on the function.
func TestPooledVMReusedScript(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	src := `board.setVar("seen", [typeof mark, config.k, board.getVar("own"), arguments.callee.mark, globalThis === this]);
		globalThis.mark = 1; mark2 = 2; try { arguments.callee.mark = 1 } catch (e) {}`
	var vm *call
	for i, k := range []string{"first", "second", "third"} {
		b := agent.NewBoard()
		b.Vars["own"] = k
		err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: src}, Config: map[string]any{"k": k}}, b)
		require.NoError(t, err)
		assert.Equal(t, []any{"undefined", k, k, nil, true}, b.Vars["seen"], "run %d", i)
		if vm == nil {
			vm = pooled(t, rt)
		}
		assert.Same(t, vm, pooled(t, rt))
	}
}
