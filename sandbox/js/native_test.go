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
