package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata is the directory of the deployment fixtures.
const testdata = "../../testdata/tools"

// registry holds every factory the fixtures use.
func registry() *resource.Registry {
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), js.Factory(), graph.Factory(), tools.Factory())
	return reg
}

// partSink collects a turn's tool results and text deltas.
type partSink struct {
	mu      sync.Mutex
	text    strings.Builder
	results []message.ToolResult
}

func (s *partSink) OnDelta(_ context.Context, _ event.Envelope, d event.StreamDeltaPayload) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.Part != nil && d.Part.ToolResult != nil {
		s.results = append(s.results, *d.Part.ToolResult)
	}
	if d.Part != nil && d.Part.Type == message.PartText {
		s.text.WriteString(d.Part.Text)
	}
	return nil
}

// A deployed agent runs a tool batch in a session: the tool results reach
// the sink as deltas and the next node reads them from the board. The
// assembly is the engine's tools dependency, or the one the runtime's
// dynamic_catalog.tools maps the agent to when the engine binds none.
func TestDeployedToolNode(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(testdata)
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(dir, "deploy.yaml"))
	require.NoError(t, err)
	const engineDeps = "deps: {script_runtime: js, tools: kit}"
	require.Contains(t, string(src), engineDeps)
	catalog := strings.Replace(string(src), engineDeps, "deps: {script_runtime: js}", 1) +
		"  dynamic_catalog:\n    tools: {assistant: kit}\n"
	for name, text := range map[string]string{
		// REF 5.1.7 (the tools dep, a tool.Assembly, feeds the graph's tool nodes)
		"engine dep": string(src),
		// REF 1.2.9 (a dynamic_catalog.tools key names a deployed agent whose turns use the assembly)
		"dynamic catalog": catalog,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc, err := deploy.ParseWithConfig([]byte(text), deploy.ParseConfig{Filename: filepath.Join(dir, "deploy.yaml"), BaseDir: dir})
			require.NoError(t, err)
			runToolTurn(t, doc)
		})
	}
}

func runToolTurn(t *testing.T, doc *deploy.Document) {
	app, err := runtime.NewBuilder(registry()).Build(context.Background(), doc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	kit, ok := app.Resource("kit")
	require.True(t, ok)
	assert.Len(t, kit.(tool.Assembly).Definitions(), 2)

	lease, err := app.Sessions().Open(context.Background(), session.Key{AgentID: "assistant", ContextID: "c1"})
	require.NoError(t, err)
	defer lease.Close()
	sink := &partSink{}
	turn, err := lease.Session().Start(context.Background(),
		agent.Request{Message: message.NewTextMessage(message.RoleUser, "weather in Oslo? and 2+3")},
		session.SinkSpec{ID: "console", Sink: sink})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)

	sink.mu.Lock()
	defer sink.mu.Unlock()
	assert.Equal(t, []message.ToolResult{
		{ToolCallID: "call_1", Content: `{"city":"Oslo","sky":"cloudy"}`},
		{ToolCallID: "call_2", Content: "5"},
	}, sink.results)
	assert.Equal(t, "Oslo is cloudy; 2 + 3 = 5", sink.text.String())
}

// The engine's tools dependency must be a tool.Assembly: the tool node's
// build refuses another value, naming the node and the dependency.
func TestDeployToolsDependencyKind(t *testing.T) {
	t.Parallel()
	doc, err := deploy.ParseWithConfig([]byte(`
version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  js: {kind: sandbox.Runtime, impl: js}
agents:
  bot:
    card: {name: Bot}
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js, tools: js}
      settings:
        graph: {name: g, entry: a, nodes: [{id: a, type: tool}]}
runtime:
  event_bus: events
`), deploy.ParseConfig{Filename: "deploy.yaml"})
	require.NoError(t, err)
	_, err = runtime.NewBuilder(registry()).Build(context.Background(), doc)
	require.Error(t, err)
	assert.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), `node "a" (tool): deps.tools: *js.Runtime is not a tool.Assembly`)
}
