package observe_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/sandbox/js"
)

func TestMain(m *testing.M) {
	js.ServeWorkerIfChild() // the worker processes of TestWorkerRestarts
	os.Exit(m.Run())
}

// testDoc has three agents of tenant acme: "bot" (a scripted model that
// calls a tool, the tool, the model again), "boom" (a script that
// throws) and "one" (one script node), and "capped" of tenant
// tight, whose turns may not run two at once.
const testDoc = `
version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  js: {kind: sandbox.Runtime, impl: js}
  llm:
    kind: model.Provider
    impl: scripted
    settings:
      replies:
        - on: user
          text: "checking"
          usage: {input: 7, output: 3}
          tool_calls: [{id: call_1, name: add, arguments: {a: 2, b: 3}}]
        - on: tool
          text: "the sum is {{input}}"
          usage: {input: 11, output: 5}
  kit:
    kind: tool.Assembly
    impl: script
    deps: {script_runtime: js}
    settings:
      tools:
        - name: add
          parameters: {type: object, properties: {a: {type: number}, b: {type: number}}}
          source: return String(config.a + config.b)
agents:
  bot:
    tenant: acme
    card: {name: Adder}
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js, model: llm, tools: kit}
      settings:
        graph:
          name: adder
          entry: model
          nodes:
            - {id: model, type: inference, config: {model: m1, all_tools: true}}
            - {id: tools, type: tool}
          edges:
            - {from: model, to: tools, condition: "tool_pending === true"}
            - {from: model, to: __end__, condition: "tool_pending !== true"}
            - {from: tools, to: model}
  boom:
    tenant: acme
    card: {name: Boom}
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js}
      settings:
        graph:
          name: boom
          entry: s
          nodes: [{id: s, type: script, config: {source: "throw new Error('no')"}}]
          edges: [{from: s, to: __end__}]
  one:
    tenant: acme
    card: {name: One}
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js}
      settings:
        graph:
          name: one
          entry: s
          nodes: [{id: s, type: script, config: {source: "board.setVar('x', 1)"}}]
          edges: [{from: s, to: __end__}]
  capped:
    tenant: tight
    card: {name: Capped}
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js, model: llm}
      settings:
        graph:
          name: capped
          entry: model
          nodes: [{id: model, type: inference, config: {model: m1}}]
          edges: [{from: model, to: __end__}]
runtime:
  event_bus: events
  tenants:
    acme: {}
    tight: {model_tokens_per_minute: 1}
`

func newApp(t testing.TB) *runtime.Runtime {
	t.Helper()
	return buildApp(t, testDoc)
}

// buildApp builds the deployment document text with the builtin
// registry, closed when the test ends.
func buildApp(t testing.TB, text string) *runtime.Runtime {
	t.Helper()
	doc, err := deploy.Parse([]byte(text))
	require.NoError(t, err)
	app, err := builtin.NewBuilder().Build(context.Background(), doc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	return app
}

// runTurn runs one turn of agentID in context contextID and returns its
// result (with the turn's error, if any).
func runTurn(t testing.TB, app *runtime.Runtime, agentID, contextID string) (*agent.Result, error) {
	t.Helper()
	ctx := context.Background()
	lease, err := app.Sessions().Open(ctx, session.Key{AgentID: agentID, ContextID: contextID})
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().Start(ctx, agent.Request{Message: message.NewTextMessage(message.RoleUser, "add 2 and 3")})
	if err != nil {
		return nil, err
	}
	res, err := turn.Wait(ctx)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	return res, err
}
