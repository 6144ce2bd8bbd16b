package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// namedRuntime is a runtime that only has a name.
type namedRuntime struct {
	sandbox.Runtime
	name string
}

func (n namedRuntime) Name() string { return n.name }

// A script node's code must suit its runtime: a module on the js runtime
// or source on the wasm runtime is a Validation error at build, naming
// the node's config key.
// REF 5.3.3
func TestScriptCodeMustSuitItsRuntime(t *testing.T) {
	rts := map[string]sandbox.Runtime{"js": namedRuntime{name: "js"}, "wasm": namedRuntime{name: "wasm"}}
	for _, tc := range []struct{ config, want string }{
		{`{"runtime": "js", "module": {"embed": "m"}, "entry": "node"}`, "module: runtime \"js\" runs JavaScript"},
		{`{"runtime": "wasm", "source": "board.setVar(\"a\", 1)"}`, "source: runtime \"wasm\" runs WebAssembly"},
	} {
		doc := &graph.Document{Name: "g", Entry: "n", Nodes: []graph.Node{{ID: "n", Type: "script", Config: json.RawMessage(tc.config)}}}
		_, err := graph.Build(context.Background(), doc, graph.Options{Runtimes: rts, ScriptRuntimeName: "js",
			Logger:      slog.New(slog.DiscardHandler),
			ResolveText: func(context.Context, json.RawMessage) (string, error) { return "\x00asm", nil }})
		require.Error(t, err)
		assert.True(t, errors.Is(err, fault.Validation), "%v", err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// A script node's config without ${board} references is handed to the
// runtime with the script (sandbox.Script.Config), the same map at every
// step, so that the runtime may keep what it made of it; a config with a
// reference is resolved at each step and handed with the call.
func TestScriptConfigStatic(t *testing.T) {
	t.Parallel()
	rt := newFake()
	doc := parseDoc(t, `{name: g, entry: a, nodes: [
		{id: a, type: script, config: {source: "#", config: {label: bug}}},
		{id: b, type: script, config: {source: "#", config: {label: "${board.label}"}}}],
		edges: [{from: a, to: b}, {from: b, to: a, condition: "__iterations < 4"}]}`)
	e := buildWith(t, doc, rt, graph.Options{})
	board := agent.NewBoard()
	board.Vars["label"] = "resolved"
	_, _, err := execute(t, e, board)
	require.NoError(t, err)
	invs := rt.invocations()
	require.Len(t, invs, 4)
	for i, inv := range invs {
		switch inv.Node {
		case "a":
			assert.Nil(t, inv.Config, "call %d", i)
			assert.Equal(t, "bug", inv.Script.Config["label"])
			assert.Equal(t, reflect.ValueOf(invs[0].Script.Config).UnsafePointer(), reflect.ValueOf(inv.Script.Config).UnsafePointer(),
				"the same map at every step")
		case "b":
			assert.Nil(t, inv.Script.Config, "call %d", i)
			assert.Equal(t, "resolved", inv.Config["label"])
		}
	}
}
