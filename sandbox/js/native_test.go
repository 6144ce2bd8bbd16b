package js_test

import (
	"context"
	"strings"
	"testing"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The functions of the script API (host, board, signal, console, run,
// node, parallel) show no Go symbol: Function.prototype.toString reads
// "function <name>() { [native code] }", and the stack of an error a host
// function raises holds the script's frames only.
func TestNativeFunctionsShowNoGoSymbols(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	d := hostabi.NewDispatcher(hostabi.Config{Host: sandboxtest.NewHost(1), Node: "n",
		Run: agent.Run{ID: "r1", AgentID: "a", Capabilities: []string{agent.CapLog}}})
	b := agent.NewBoard()
	err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", ABI: d, Script: sandbox.Script{Source: `
		const shown = {};
		for (const [api, obj] of Object.entries({host, board, signal, console, run, node, parallel})) {
			for (const k of Object.getOwnPropertyNames(obj)) {
				if (typeof obj[k] === "function") {
					shown[api + "." + k] = Function.prototype.toString.call(obj[k]) + " " + String(obj[k]) + " " + obj[k].name;
				}
			}
		}
		board.setVar("shown", shown);
		const stacks = [];
		try { host.publish("x") } catch (e) { stacks.push(String(e.stack)) }
		try { host.log() } catch (e) { stacks.push(String(e.stack)) }
		function inner() { host.publish("y") }
		try { inner() } catch (e) { stacks.push(String(e.stack)) }
		board.setVar("stacks", stacks);
	`}}, b)
	require.NoError(t, err)

	shown, ok := b.Vars["shown"].(map[string]any)
	require.True(t, ok)
	assert.Contains(t, shown, "host.publish")
	assert.Contains(t, shown, "board.setVar")
	for name, v := range shown {
		s := v.(string)
		short := name[strings.IndexByte(name, '.')+1:]
		assert.Contains(t, s, "function "+short+"() { [native code] }", name)
		assert.True(t, strings.HasSuffix(s, " "+short), "%s: name is %q", name, s)
		for _, leak := range []string{"github.com", "(*call)", "func1", ".go"} {
			assert.NotContains(t, s, leak, name)
		}
	}

	stacks, ok := b.Vars["stacks"].([]any)
	require.True(t, ok)
	require.Len(t, stacks, 3)
	for _, v := range stacks {
		s := v.(string)
		assert.Contains(t, s, "at n:", "the script's frame stays: %s", s)
		for _, leak := range []string{"github.com", "(*call)", "(native)"} {
			assert.NotContains(t, s, leak, s)
		}
	}
	assert.Contains(t, stacks[2].(string), "at inner (n:", "a script function's frame stays")
}

// No function a script can reach — the script API, the guarded built-ins,
// accessors the sandbox installs — shows a Go symbol in its source text or
// its name.
func TestNoReachableFunctionShowsGoSymbols(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	b := agent.NewBoard()
	err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `
		const leaks = [], seen = new Set(), queue = [[globalThis, "globalThis"]];
		while (queue.length && seen.size < 20000) {
			const [o, path] = queue.shift();
			if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) continue;
			seen.add(o);
			if (typeof o === "function") {
				let s = String(o.name);
				try { s = Function.prototype.toString.call(o) + " " + s } catch (e) {} // a proxy
				if (/github\.com|\.func\d|\(\*|\.go\b/.test(s)) leaks.push(path + ": " + s);
			}
			for (const k of Reflect.ownKeys(o)) {
				const d = Reflect.getOwnPropertyDescriptor(o, k);
				const name = path + "." + String(k);
				if (d.get) queue.push([d.get, name + "<get>"]);
				if (d.set) queue.push([d.set, name + "<set>"]);
				if ("value" in d) queue.push([d.value, name]);
			}
			queue.push([Object.getPrototypeOf(o), path + ".<proto>"]);
		}
		board.setVar("leaks", leaks);
		board.setVar("seen", seen.size);
	`}}, b)
	require.NoError(t, err)
	assert.Greater(t, b.Vars["seen"], 500.0, "the walk reached the built-ins")
	assert.Empty(t, b.Vars["leaks"])
}

// The built-ins that join strings a script sets, which the sandbox
// replaces to count their result first (Error.prototype.toString,
// RegExp.prototype.toString, Array.prototype.toLocaleString), and the
// concatenations it rewrites, give what the language says: names and
// messages, empty parts, getters read once in order, holes and nullish
// elements, each element's own toLocaleString, objects converted by
// valueOf, toString and Symbol.toPrimitive, and the TypeErrors.
func TestJoiningKeepsItsMeaning(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	b := agent.NewBoard()
	err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `
		const log = [];
		const a = "a", o = {valueOf() { return 2 }, toString() { return "T" }}, p = {[Symbol.toPrimitive](h) { return h }};
		const e = {get name() { log.push("name"); return "N" }, get message() { log.push("message"); return "M" }};
		const errs = [];
		for (const f of [() => Error.prototype.toString.call(1), () => RegExp.prototype.toString.call("x"),
			() => Array.prototype.toLocaleString.call(null), () => [{toLocaleString: 1}].toLocaleString(),
			() => Symbol() + "", () => ({valueOf: 1, toString: 1}) + a, () => ` + "`${'a'}${Symbol()}`" + `]) {
			try { f(); errs.push("none") } catch (err) { errs.push(err.name + ": " + err.message) }
		}
		board.setVar("out", [String(new TypeError("m")), String(new RangeError()), Error.prototype.toString.call(e),
			Error.prototype.toString.call({name: "", message: "m"}), Error.prototype.toString.call({name: "N", message: ""}),
			Error.prototype.toString.call({}), String(/a\/b/gi), RegExp.prototype.toString.call({source: "s", flags: "f"}),
			[1, null, , undefined, "x", {toLocaleString() { return "L" }}, [2, 3]].toLocaleString(),
			Array.prototype.toLocaleString.call({length: 2, 0: "p", 1: 4}),
			a + o, o + a, a + p, ` + "`${o}|${p}|${a}`" + `, 1 + 2 + a, a + 1 + 2, errs, log]);`}}, b)
	require.NoError(t, err)
	assert.Equal(t, []any{"TypeError: m", "RangeError", "N: M", "m", "N", "Error", `/a\/b/gi`, "/s/f",
		"1,,,,x,L,2,3", "p,4", "a2", "2a", "adefault", "T|string|a", "3a", "a12",
		[]any{"TypeError: Value is not an object: 1", "TypeError: Value is not an object: x",
			"TypeError: Cannot convert undefined or null to object",
			"TypeError: toLocaleString is not a function",
			"TypeError: Cannot convert a Symbol value to a string",
			"TypeError: Cannot convert object to primitive value",
			"TypeError: Cannot convert a Symbol value to a string"},
		[]any{"name", "message"}}, b.Vars["out"])
}

// The constructors the sandbox replaces with guarding proxies (typed
// arrays, ArrayBuffer, BigInt64Array) keep instanceof, for their own
// instances, a subclass's and objects that merely inherit from their
// prototype; instanceof threw a TypeError on them ("Expecting a function
// in instanceof check"): goja's proxies have none of their own.
func TestGuardedConstructorsKeepInstanceof(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	b := agent.NewBoard()
	err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `
		// BigInt
		class Bytes extends Uint8Array {}
		const out = [new Uint8Array(2) instanceof Uint8Array, new ArrayBuffer(8) instanceof ArrayBuffer,
			new Float64Array(1) instanceof Float64Array, new BigInt64Array(1) instanceof BigInt64Array,
			new Bytes(1) instanceof Bytes, new Bytes(1) instanceof Uint8Array, new Uint8Array(1) instanceof Bytes,
			Object.create(Int16Array.prototype) instanceof Int16Array, [] instanceof Uint8Array, 1 instanceof Uint8Array,
			new Int8Array(1) instanceof Uint8Array, Uint8Array[Symbol.hasInstance].call(null, new Uint8Array(1))];
		board.setVar("out", out)`}}, b)
	require.NoError(t, err)
	assert.Equal(t, []any{true, true, true, true, true, true, false, true, false, false, false, false}, b.Vars["out"])
}
