package tools_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/require"
)

// newJS returns a goja runtime closed at the end of the test.
func newJS(t testing.TB) *js.Runtime {
	t.Helper()
	rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: 5 * time.Second}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// jsTool declares a JavaScript tool.
func jsTool(name, params, source string) tools.ToolSettings {
	ts := tools.ToolSettings{Name: name, Description: "the " + name + " tool", Source: jsonString(source)}
	if params != "" {
		ts.Parameters = json.RawMessage(params)
	}
	return ts
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// newAssembly builds tools in rt bound as "js".
func newAssembly(t testing.TB, rt sandbox.Runtime, ts ...tools.ToolSettings) *tools.Assembly {
	t.Helper()
	a, err := tools.New(context.Background(), tools.Settings{Tools: ts}, map[string]sandbox.Runtime{"js": rt})
	require.NoError(t, err)
	return a
}

// call returns a tool call.
func call(id, name, args string) message.ToolCall {
	return message.ToolCall{ID: id, Name: name, Arguments: args}
}

// batch returns a batch of calls for agent "bot" with the default grants.
func batch(host agent.Host, calls ...message.ToolCall) tool.Batch {
	return tool.Batch{Host: host, Run: agent.Run{ID: "run-1", AgentID: "bot"}, Node: "tools", Calls: calls}
}

// fakeRuntime is a sandbox.Runtime that records invocations and runs a Go
// function; it stands for any runtime (a wasm runner included).
type fakeRuntime struct {
	name string
	fn   func(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error)

	mu   sync.Mutex
	invs []sandbox.Invocation
}

var _ sandbox.Runtime = (*fakeRuntime)(nil)

func (f *fakeRuntime) Name() string { return f.name }

func (f *fakeRuntime) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	f.mu.Lock()
	f.invs = append(f.invs, inv)
	f.mu.Unlock()
	return f.fn(ctx, inv)
}

func (f *fakeRuntime) Eval(context.Context, sandbox.Evaluation) (any, error) { return nil, nil }

func (f *fakeRuntime) invocations() []sandbox.Invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sandbox.Invocation(nil), f.invs...)
}

// resourceInput is the factory input of settings s with deps and a loader
// over files.
func resourceInput(t testing.TB, s tools.Settings, deps map[string]any, files map[string]string) resource.Input {
	t.Helper()
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	return resource.Input{Name: "tools", Settings: raw, Deps: deps, Loader: mapLoader(files)}
}

// mapLoader loads files from a map.
type mapLoader map[string]string

func (m mapLoader) Load(_ context.Context, src resource.Source) ([]byte, error) {
	if s, ok := m[src.File]; ok {
		return []byte(s), nil
	}
	return nil, fault.New(fault.NotFound, "load", "%s: no such file", src)
}

func (m mapLoader) Expand(s string) (string, error) { return s, nil }
