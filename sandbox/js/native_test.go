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
