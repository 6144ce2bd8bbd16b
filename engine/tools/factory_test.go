package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The factory is tool.Assembly/script with one optional Many dep,
// script_runtime.
func TestFactorySpec(t *testing.T) {
	t.Parallel()
	spec := tools.Factory().Spec()
	require.NoError(t, spec.Validate())
	assert.Equal(t, tool.Kind, spec.Kind)
	assert.Equal(t, "script", spec.Impl)
	assert.Equal(t, []resource.DepSpec{{Name: "script_runtime", Type: sandbox.Kind, Many: true}}, spec.Deps)
}

// Bad settings fail the build with a Validation error naming the setting.
func TestFactoryErrors(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	good := `{"name":"a","source":"return 1"}`
	cases := []struct {
		name, settings, err string
		deps                map[string]any
		kind                *fault.Kind
	}{
		{"no tools", `{}`, "settings.tools: at least one tool is required", nil, nil},
		{"unknown key", `{"tools":[` + good + `],"extra":1}`, `unknown field "extra"`, nil, nil},
		{"unknown tool key", `{"tools":[{"name":"a","source":"x","when":1}]}`, `unknown field "when"`, nil, nil},
		{"bad name", `{"tools":[{"name":"a b","source":"x"}]}`, `settings.tools[0]: name: "a b" is not 1 to 64`, nil, nil},
		{"empty name", `{"tools":[{"source":"x"}]}`, `settings.tools[0]: name`, nil, nil},
		{"duplicate", `{"tools":[` + good + `,` + good + `]}`, `settings.tools[1].name: tool "a" is declared twice`, nil, nil},
		{"runtime not bound", `{"tools":[{"name":"a","runtime":"wasm","source":"x"}]}`, `runtime: script runtime "wasm" is not bound (bound: js)`, nil, nil},
		{"no runtime", `{"tools":[` + good + `]}`, `script runtime "js" is not bound (bound: none)`, map[string]any{}, nil},
		{"both source and module", `{"tools":[{"name":"a","source":"x","module":{"file":"m.wasm"},"entry":"e"}]}`, "exactly one of source and module", nil, nil},
		{"neither", `{"tools":[{"name":"a"}]}`, "exactly one of source and module", nil, nil},
		{"empty source", `{"tools":[{"name":"a","source":"  "}]}`, "source: the script is empty", nil, nil},
		{"entry without module", `{"tools":[{"name":"a","source":"x","entry":"e"}]}`, "entry: only a module has an entry", nil, nil},
		{"module without entry", `{"tools":[{"name":"a","module":{"file":"m.wasm"}}]}`, "entry: a module needs the export", nil, nil},
		{"module inline", `{"tools":[{"name":"a","module":"bytes","entry":"e"}]}`, "module: want {file: path}", nil, nil},
		{"module missing", `{"tools":[{"name":"a","module":{"file":"gone.wasm"},"entry":"e"}]}`, "no such file", nil, fault.NotFound},
		{"source file missing", `{"tools":[{"name":"a","source":{"file":"gone.js"}}]}`, "no such file", nil, fault.NotFound},
		{"schema keyword", `{"tools":[{"name":"a","source":"x","parameters":{"type":"object","minProperties":"one"}}]}`, `settings.tools[0]: parameters: compile schema: not a valid schema: minProperties: want integer, got string`, nil, nil},
		{"schema remote ref", `{"tools":[{"name":"a","source":"x","parameters":{"type":"object","properties":{"p":{"$ref":"https://example.com/p.json"}}}}]}`, `settings.tools[0]: parameters: compile schema: reference "https://example.com/p.json"`, nil, nil},
		{"schema not object", `{"tools":[{"name":"a","source":"x","parameters":{"type":"string"}}]}`, "must have type: object", nil, nil},
		{"schema without type", `{"tools":[{"name":"a","source":"x","parameters":{"properties":{}}}]}`, "must have type: object", nil, nil},
		{"bad limit", `{"tools":[` + good + `],"limits":{"wall_time":"soon"}}`, "limits.wall_time", nil, nil},
		{"negative limit", `{"tools":[` + good + `],"limits":{"max_events":-1}}`, "max_events must be >= 0", nil, nil},
		{"dep not a runtime", `{"tools":[` + good + `]}`, "is not a sandbox.Runtime", map[string]any{"script_runtime": 3}, nil},
		{"runtime bound twice", `{"tools":[` + good + `]}`, "both bind script runtime", map[string]any{"script_runtime": js, "script_runtime.js": js}, fault.Conflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			deps := tc.deps
			if deps == nil {
				deps = map[string]any{"script_runtime": js}
			}
			_, err := tools.Factory().New(context.Background(), resource.Input{Name: "tb", Settings: json.RawMessage(tc.settings),
				Deps: deps, Loader: mapLoader{}})
			require.Error(t, err)
			kind := tc.kind
			if kind == nil {
				kind = fault.Validation
			}
			assert.ErrorIs(t, err, kind)
			assert.Contains(t, err.Error(), `build tool assembly "tb"`)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// Sources and schemas may live in files next to the document (a schema
// file may be YAML); a named runtime and script_runtime_name pick the
// runtime.
func TestFactoryFilesAndRuntimes(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	settings := `{"script_runtime_name":"main","limits":{"wall_time":"1s","max_value_bytes":4096},"tools":[
	  {"name":"greet","source":{"file":"greet.js"},"parameters":{"file":"greet.yaml"}},
	  {"name":"side","runtime":"other","source":"return 'side'"}]}`
	files := map[string]string{
		"greet.js":   "return 'hello ' + config.who",
		"greet.yaml": "type: object\nproperties:\n  who: {type: string}\nrequired: [who]\n",
	}
	v, err := tools.Factory().New(context.Background(), resource.Input{Name: "tb", Settings: json.RawMessage(settings),
		Deps: map[string]any{"script_runtime": js, "script_runtime.other": js}, Loader: mapLoader(files)})
	require.NoError(t, err)
	a := v.(*tools.Assembly)
	assert.JSONEq(t, `{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}`, string(a.Definitions()[0].Parameters))
	assert.Equal(t, int64(4096), a.Limits().MaxValueBytes, "the settings tighten the runtime's limits")
	assert.Equal(t, "1s", a.Limits().WallTime.String())
	res, err := a.Execute(context.Background(), batch(agenttest.NewHost(),
		call("c1", "greet", `{"who":"Ada"}`), call("c2", "side", ""), call("c3", "greet", `{}`)))
	require.NoError(t, err)
	assert.Equal(t, message.ToolResult{ToolCallID: "c1", Content: "hello Ada"}, res[0])
	assert.Equal(t, message.ToolResult{ToolCallID: "c2", Content: "side"}, res[1])
	assert.True(t, res[2].IsError)
}

// A JavaScript tool that does not compile fails the build, naming the
// tool, rather than every call.
func TestFactoryCompilesSources(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	for _, src := range []string{`return (`, `}); host.publish("x"); (function() {`, `/* never closed`} {
		_, err := tools.New(context.Background(), tools.Settings{Tools: []tools.ToolSettings{jsTool("bad", "", src)}},
			map[string]sandbox.Runtime{"js": js})
		require.ErrorIs(t, err, fault.Validation, src)
		assert.Contains(t, err.Error(), "settings.tools[0]: source", src)
	}
}
