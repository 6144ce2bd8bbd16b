package graph_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mapLoader serves files from a map.
type mapLoader map[string]string

func (m mapLoader) Load(_ context.Context, src resource.Source) ([]byte, error) {
	s, ok := m[src.File+src.Embed]
	if !ok {
		return nil, fault.New(fault.NotFound, "load", "%s is missing", src)
	}
	return []byte(s), nil
}

func (mapLoader) Expand(s string) (string, error) { return s, nil }

const inlineGraph = `{"name": "g", "entry": "a",
  "nodes": [{"id": "a", "type": "script", "config": {"source": "set x 1"}},
            {"id": "b", "type": "script", "config": {"runtime": "wasm", "source": "set y 1"}}],
  "edges": [{"from": "a", "to": "b", "condition": "true"}]}`

// newFromSettings builds an engine through the factory.
func newFromSettings(t *testing.T, settings string, deps map[string]any, loader resource.Loader) (*graph.Engine, error) {
	t.Helper()
	v, err := graph.Factory().New(context.Background(), resource.Input{
		Name: "bot", Settings: json.RawMessage(settings), Deps: deps, Loader: loader,
	})
	if err != nil {
		return nil, err
	}
	e, ok := v.(*graph.Engine)
	require.True(t, ok, "%T", v)
	return e, nil
}

// The factory is agent.Engine/graph with one optional Many dep,
// script_runtime, of type sandbox.Runtime.
func TestFactorySpec(t *testing.T) {
	t.Parallel()
	// REF 5.1.7 (script_runtime dep)
	spec := graph.Factory().Spec()
	require.NoError(t, spec.Validate())
	assert.Equal(t, "agent.Engine", spec.Kind)
	assert.Equal(t, "graph", spec.Impl)
	assert.Equal(t, []resource.DepSpec{{Name: "script_runtime", Type: sandbox.Kind, Many: true},
		{Name: "node_type", Type: graph.NodeTypeKind, Many: true},
		{Name: graph.ModelDep, Type: "model.Provider", Many: true},
		{Name: "tools", Type: "tool.Assembly"}}, spec.Deps)
	d, ok := spec.MatchDep("script_runtime.wasm")
	assert.True(t, ok)
	assert.Equal(t, "script_runtime", d.Name)
}

// Settings take their defaults, and a file graph loads through the
// loader.
func TestFactorySettings(t *testing.T) {
	t.Parallel()
	// REF 5.1.6 (defaults: script_runtime_name js, max_iterations 100, timeout 0, run_end_publish_timeout 5s, max_node_retries 0)
	// REF 5.1.1 (the graph given inline or as {file})
	deps := map[string]any{"script_runtime": newFake(), "script_runtime.wasm": newFake()}
	e, err := newFromSettings(t, `{"graph": `+inlineGraph+`}`, deps, nil)
	require.NoError(t, err)
	o := e.Options()
	assert.Equal(t, "js", o.ScriptRuntimeName)
	assert.Equal(t, 100, o.MaxIterations)
	assert.Zero(t, o.Timeout)
	assert.Equal(t, 5*time.Second, o.RunEndPublishTimeout)
	assert.Zero(t, o.MaxNodeRetries)
	assert.Equal(t, graph.ParallelOptions{MaxBranches: graph.DefaultMaxBranches, MergeStrategy: graph.LastWriteWins}, o.Parallel)
	assert.ElementsMatch(t, []string{"js", "wasm"}, keys(o.Runtimes))

	loader := mapLoader{"graphs/g.yaml": "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: {file: a.js}}}]\n",
		"a.js": "set from_file true"}
	e, err = newFromSettings(t, `{"graph": {"file": "graphs/g.yaml"},
	  "script_runtime_name": "wasm",
	  "build": {"max_iterations": 7, "timeout": "1m", "run_end_publish_timeout": "2s", "max_node_retries": 2,
	            "parallel": {"enabled": true, "branch_timeout": "3s", "max_concurrency": 2, "max_branches": 4, "merge_strategy": "first_write_wins"}},
	  "limits": {"wall_time": "250ms", "max_events": 10, "max_board_bytes": 2048}}`, map[string]any{"script_runtime.wasm": newFake()}, loader)
	require.NoError(t, err)
	o = e.Options()
	assert.Equal(t, "wasm", o.ScriptRuntimeName)
	assert.Equal(t, 7, o.MaxIterations)
	assert.Equal(t, time.Minute, o.Timeout)
	assert.Equal(t, 2*time.Second, o.RunEndPublishTimeout)
	assert.Equal(t, 2, o.MaxNodeRetries)
	assert.Equal(t, graph.ParallelOptions{Enabled: true, BranchTimeout: 3 * time.Second, MaxConcurrency: 2, MaxBranches: 4,
		MergeStrategy: graph.FirstWriteWins}, o.Parallel)
	assert.Equal(t, sandbox.Limits{WallTime: 250 * time.Millisecond, MaxEvents: 10, MaxBoardBytes: 2048}, o.Limits)
	board, err := e.Execute(context.Background(), testRun(), newHost(), nil)
	require.NoError(t, err)
	assert.Equal(t, true, board.Vars["from_file"], "the script file resolved through the loader")
}

// Bad settings are Validation errors that say which setting.
func TestFactorySettingsErrors(t *testing.T) {
	t.Parallel()
	// REF 5.1.6 (run_end_publish_timeout > 0; max_node_retries >= 0; merge_strategy first_write_wins|last_write_wins)
	deps := map[string]any{"script_runtime": newFake(), "script_runtime.wasm": newFake()}
	tests := []struct {
		name, settings, want string
	}{
		{"graph required", `{}`, "settings.graph is required"},
		{"unknown key", `{"graph": ` + inlineGraph + `, "graphs": 1}`, `unknown field "graphs"`},
		{"unknown build key", `{"graph": ` + inlineGraph + `, "build": {"retries": 1}}`, `unknown field "retries"`},
		{"max iterations", `{"graph": ` + inlineGraph + `, "build": {"max_iterations": 0}}`, "max_iterations must be > 0"},
		{"end timeout", `{"graph": ` + inlineGraph + `, "build": {"run_end_publish_timeout": "0s"}}`, "run_end_publish_timeout must be > 0"},
		{"retries", `{"graph": ` + inlineGraph + `, "build": {"max_node_retries": -1}}`, "max_node_retries must be between 0 and 10"},
		{"duration", `{"graph": ` + inlineGraph + `, "build": {"timeout": "soon"}}`, `"soon" is not a duration`},
		{"merge", `{"graph": ` + inlineGraph + `, "build": {"parallel": {"merge_strategy": "random"}}}`, `merge_strategy "random"`},
		{"limits", `{"graph": ` + inlineGraph + `, "limits": {"max_events": -1}}`, "max_events must be >= 0"},
		{"graph file", `{"graph": {"file": "nope.yaml"}}`, "nope.yaml is missing"},
		{"graph path", `{"graph": {"name": "g", "entry": "a", "nodes": [{"id": "a", "type": "script", "cfg": {}}]}}`,
			`graph.nodes[0]: unknown field "cfg"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := newFromSettings(t, tt.settings, deps, mapLoader{})
			require.Error(t, err)
			assert.ErrorContains(t, err, tt.want)
			assert.ErrorContains(t, err, `build graph engine "bot"`)
			if tt.name != "graph file" {
				assert.ErrorIs(t, err, fault.Validation)
			}
		})
	}
}

// script_runtime binds the runtime named script_runtime_name,
// script_runtime.<name> the runtime <name>; a graph whose script nodes or
// conditions need a runtime that is not bound fails naming the place.
func TestFactoryRuntimes(t *testing.T) {
	t.Parallel()
	// REF 5.1.7 (script_runtime is needed by script nodes)
	// REF 5.3.3 (runtime names a bound script runtime)
	js, wasm := newFake(), newFake()
	e, err := newFromSettings(t, `{"graph": `+inlineGraph+`}`, map[string]any{"script_runtime.js": js, "script_runtime.wasm": wasm}, nil)
	require.NoError(t, err)
	_, err = e.Execute(context.Background(), testRun(), newHost(), nil)
	require.NoError(t, err)
	assert.Len(t, js.invocations(), 1)
	require.Len(t, wasm.invocations(), 1)
	assert.Equal(t, "b", wasm.invocations()[0].Node)

	_, err = newFromSettings(t, `{"graph": `+inlineGraph+`}`, map[string]any{"script_runtime": js, "script_runtime.js": js, "script_runtime.wasm": wasm}, nil)
	assert.ErrorIs(t, err, fault.Conflict)
	assert.ErrorContains(t, err, `deps.script_runtime and deps.script_runtime.js both bind script runtime "js"`)

	_, err = newFromSettings(t, `{"graph": `+inlineGraph+`}`, map[string]any{"script_runtime": js}, nil)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `graph.nodes[1].config: node "b" (script): runtime: script runtime "wasm" is not bound (bound: js)`)

	_, err = newFromSettings(t, `{"graph": `+inlineGraph+`}`, nil, nil)
	assert.ErrorContains(t, err, `graph.edges[0].condition: edge a -> b: a condition needs script runtime "js", and none is bound`)

	_, err = newFromSettings(t, `{"graph": `+inlineGraph+`}`, map[string]any{"script_runtime": "not a runtime"}, nil)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `dep "script_runtime": string is not a sandbox.Runtime`)
}

// The engine is a Resumer, as the session layer needs.
func TestFactoryValueIsResumer(t *testing.T) {
	t.Parallel()
	// REF 5.5.3 (the engine implements CanResume)
	v, err := graph.Factory().New(context.Background(), resource.Input{Name: "bot",
		Settings: json.RawMessage(`{"graph": ` + inlineGraph + `}`),
		Deps:     map[string]any{"script_runtime": newFake(), "script_runtime.wasm": newFake()}})
	require.NoError(t, err)
	_, ok := v.(agent.Resumer)
	assert.True(t, ok)
	_, ok = v.(agent.Engine)
	assert.True(t, ok)
}

// echoType is a custom node type: it copies config.text into the var
// config.into.
type echoType struct{ name string }

func (t echoType) Name() string { return t.name }

func (echoType) Build(_ context.Context, in graph.NodeInput) (graph.Handler, error) {
	var c struct {
		Text string `json:"text"`
		Into string `json:"into"`
	}
	if err := graph.DecodeConfig(in.Node.Config, &c); err != nil {
		return nil, err
	}
	if _, ok := in.Deps["node_type.echo"]; !ok {
		return nil, fault.New(fault.Validation, "", "the node type does not see the engine's deps")
	}
	return echoHandler{}, nil
}

type echoHandler struct{}

func (echoHandler) Run(_ context.Context, c *graph.Call) error {
	c.Board.Vars[c.Config["into"].(string)] = c.Config["text"]
	return nil
}

// Node types mounted through node_type deps run like the built-in ones; a
// name that clashes is a Conflict.
func TestFactoryNodeTypes(t *testing.T) {
	t.Parallel()
	// REF 5.1.7 (node_type / node_type.* custom node types)
	// REF 5.1.5 (a node's config keys must exist in its type's config)
	g := `{"graph": {"name": "g", "entry": "a", "nodes": [{"id": "a", "type": "echo", "config": {"text": "hi ${board.who}", "into": "said"}}]}}`
	e, err := newFromSettings(t, g, map[string]any{"node_type.echo": echoType{"echo"}}, nil)
	require.NoError(t, err)
	board := agent.NewBoard()
	board.Vars["who"] = "ada"
	out, err := e.Execute(context.Background(), testRun(), newHost(), board)
	require.NoError(t, err)
	assert.Equal(t, "hi ada", out.Vars["said"])

	_, err = newFromSettings(t, g, map[string]any{"node_type.echo": echoType{"script"}}, nil)
	assert.ErrorIs(t, err, fault.Conflict)
	assert.ErrorContains(t, err, `deps.node_type.echo: node type "script" clashes with the built-in node type "script"`)

	bad := `{"graph": {"name": "g", "entry": "a", "nodes": [{"id": "a", "type": "echo", "config": {"txt": "x"}}]}}`
	_, err = newFromSettings(t, bad, map[string]any{"node_type.echo": echoType{"echo"}}, nil)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `graph.nodes[0].config: node "a" (echo): unknown field "txt"`)

	_, err = newFromSettings(t, g, map[string]any{"node_type": 7}, nil)
	assert.ErrorContains(t, err, `dep "node_type": int is not a graph.NodeType`)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
