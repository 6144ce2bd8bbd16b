package graph_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const chatDoc = `
name: chat
entry: chat
nodes:
  - id: chat
    type: inference
    config:
      model: {name: demo-1}
      system_prompt: "You help ${board.user:someone}."
      output_key: reply
      usage_key: usage
      stream: true
edges:
  - {from: chat, to: __end__}
`

const weatherReplies = `
replies:
  - match: weather
    on: user
    text: "Let me check. "
    chunks: 2
    tool_calls: [{id: call_1, name: get_weather, arguments: {city: Lyon}}]
    usage: {input: 20, output: 8}
  - on: tool
    text: "It is {{input}} in Lyon."
fallback:
  text: "Hello there!"
  chunks: 2
`

// inferenceEngine builds doc with p as the default provider and tools as
// the tool assembly (when not nil).
func inferenceEngine(t testing.TB, doc string, p model.Provider, tools tool.Assembly) *graph.Engine {
	t.Helper()
	deps := map[string]any{graph.ModelDep: p}
	if tools != nil {
		deps[graph.ToolsDep] = tools
	}
	return buildWith(t, parseDoc(t, doc), newFake(), graph.Options{Deps: deps})
}

// REF 5.3.1
func TestInferenceAppendsTheReply(t *testing.T) {
	t.Parallel()
	e := inferenceEngine(t, chatDoc, scriptedProvider(t, weatherReplies), nil)
	host, board, err := execute(t, e, boardWith(userMessage("hi")))
	require.NoError(t, err)
	main := board.Channel(agent.MainChannel)
	require.Len(t, main, 2)
	assert.Equal(t, message.NewTextMessage(message.RoleAssistant, "Hello there!"), main[1])
	assert.Equal(t, "Hello there!", board.Vars["reply"])
	assert.Equal(t, false, board.Vars[graph.DefaultToolPendingKey])
	// The scripted provider counts words: "You help someone." and "hi" in,
	// "Hello there!" out.
	assert.Equal(t, map[string]any{"input": 4.0, "output": 2.0, "total": 6.0}, board.Vars["usage"])
	assert.Equal(t, []agent.Usage{{InputTokens: 4, OutputTokens: 2, TotalTokens: 6}}, host.Usage(), "usage is reported every call")
}

// REF 5.3.1: a tool_calls finish sets tool_pending_key and appends
// the calls; the node never executes them.
func TestInferenceToolCallsAreLeftPending(t *testing.T) {
	t.Parallel()
	tools := newFakeTools("get_weather", "get_time")
	doc := `
name: chat
entry: chat
nodes:
  - id: chat
    type: inference
    config: {tools: [get_weather], tool_pending_key: needs_tools}
`
	e := inferenceEngine(t, doc, scriptedProvider(t, weatherReplies), tools)
	host, board, err := execute(t, e, boardWith(userMessage("weather?")))
	require.NoError(t, err)
	last := board.Channel(agent.MainChannel)[1]
	assert.Equal(t, message.RoleAssistant, last.Role)
	assert.Equal(t, "Let me check. ", last.Text())
	assert.Equal(t, []message.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Lyon"}`}}, last.ToolCalls())
	assert.Equal(t, true, board.Vars["needs_tools"])
	assert.Zero(t, tools.executions())
	assert.Equal(t, []agent.Usage{{InputTokens: 20, OutputTokens: 8, TotalTokens: 28}}, host.Usage())
	assert.Empty(t, deltas(t, host), "stream is off")
}

// REF 5.3.1: the channel must not be empty and its tail must be a
// user or tool message.
func TestInferenceTailMustBeUserOrTool(t *testing.T) {
	t.Parallel()
	e := inferenceEngine(t, chatDoc, scriptedProvider(t, weatherReplies), nil)
	call := message.Message{Role: message.RoleAssistant, Parts: []message.Part{message.ToolCallPart("c", "f", "")}}
	tests := []struct {
		name  string
		board *agent.Board
		want  string
	}{
		{"empty", boardWith(), `channel "__main_channel" is empty`},
		{"assistant tail", boardWith(userMessage("a"), call), `is from "assistant", want user or tool`},
		{"system tail", boardWith(message.NewTextMessage(message.RoleSystem, "s")), `is from "system"`},
	}
	for _, tt := range tests {
		_, _, err := execute(t, e, tt.board)
		require.ErrorIs(t, err, fault.Validation, tt.name)
		assert.Contains(t, err.Error(), tt.want, tt.name)
	}
	tool := message.Message{Role: message.RoleTool, Parts: []message.Part{message.ToolResultPart("c", "sunny", false)}}
	_, board, err := execute(t, e, boardWith(userMessage("weather?"), call, tool))
	require.NoError(t, err, "a tool tail is fine")
	assert.Equal(t, "It is sunny in Lyon.", board.Vars["reply"])
}

// REF 5.3.1: in stream mode the text arrives as the deltas
// host.emit("token") publishes, tool calls as host.emit("tool_call").
func TestInferenceStreamsDeltas(t *testing.T) {
	t.Parallel()
	doc := `
name: chat
entry: chat
nodes:
  - id: chat
    type: inference
    config: {stream: true, all_tools: true}
`
	e := inferenceEngine(t, doc, scriptedProvider(t, weatherReplies), newFakeTools("get_weather"))
	host, _, err := execute(t, e, boardWith(userMessage("weather?")))
	require.NoError(t, err)
	got := deltas(t, host)
	require.Len(t, got, 3)
	token, err := hostabi.EmitDelta(hostabi.EmitToken, json.RawMessage(`"Let me "`))
	require.NoError(t, err)
	assert.Equal(t, token, got[0])
	assert.Equal(t, "check. ", got[1].Part.Text)
	call, err := hostabi.EmitDelta(hostabi.EmitToolCall, json.RawMessage(`{"id":"call_1","name":"get_weather","arguments":"{\"city\":\"Lyon\"}"}`))
	require.NoError(t, err)
	assert.Equal(t, call, got[2])
	for _, env := range host.Envelopes() {
		if event.IsStreamDelta(env.Subject) {
			assert.Equal(t, event.SubjectStreamDelta("run-1", event.Actor("bot", "chat")), env.Subject)
			assert.Equal(t, "chat", env.Header(event.HeaderNodeID))
		}
	}
}

// Inside a parallel branch the deltas are speculative and name the fork
// and the branch.
// REF 5.3.1
// REF 5.6.3
func TestInferenceDeltasInParallelBranchesAreSpeculative(t *testing.T) {
	t.Parallel()
	doc := `
name: fan
entry: start
nodes:
  - id: start
    type: script
    config: {source: "set started true"}
  - id: left
    type: inference
    config: {messages_channel: left, stream: true}
  - id: right
    type: inference
    config: {messages_channel: right, stream: true}
edges:
  - {from: start, to: left}
  - {from: start, to: right}
`
	e := buildWith(t, parseDoc(t, doc), newFake(), graph.Options{
		Deps:     map[string]any{graph.ModelDep: scriptedProvider(t, weatherReplies)},
		Parallel: graph.ParallelOptions{Enabled: true},
	})
	board := agent.NewBoard()
	board.Append("left", userMessage("hi"))
	board.Append("right", userMessage("hello"))
	host, out, err := execute(t, e, board)
	require.NoError(t, err)
	branches := map[string]int{}
	for _, d := range deltas(t, host) {
		if d.Type != event.DeltaPart {
			continue
		}
		assert.True(t, d.Speculative)
		assert.NotEmpty(t, d.ForkID)
		branches[d.BranchID]++
	}
	assert.Equal(t, map[string]int{"left": 2, "right": 2}, branches)
	assert.Equal(t, "Hello there!", out.Channel("left")[1].Text())
	assert.Equal(t, "Hello there!", out.Channel("right")[1].Text())
}

// REF 5.3.1: a failure mid-stream commits the partial text and
// reports the usage.
func TestInferenceFailureMidStreamCommitsPartialText(t *testing.T) {
	t.Parallel()
	p := scriptedProvider(t, `
replies:
  - text: "Half an ans"
    chunks: 3
    usage: {input: 5, output: 3}
    error: {kind: not_available, message: connection reset}
`)
	e := inferenceEngine(t, chatDoc, p, nil)
	host, board, err := execute(t, e, boardWith(userMessage("hi")))
	require.ErrorIs(t, err, fault.NotAvailable)
	assert.Contains(t, err.Error(), `node "chat"`)
	assert.Contains(t, err.Error(), "connection reset")
	main := board.Channel(agent.MainChannel)
	require.Len(t, main, 2)
	assert.Equal(t, message.NewTextMessage(message.RoleAssistant, "Half an ans"), main[1])
	assert.Equal(t, "Half an ans", board.Vars["reply"])
	assert.Equal(t, []agent.Usage{{InputTokens: 5, OutputTokens: 3, TotalTokens: 8}}, host.Usage())
	assert.Len(t, deltas(t, host), 3)
}

func TestInferenceUsageBudgetStopsTheRun(t *testing.T) {
	t.Parallel()
	e := inferenceEngine(t, chatDoc, scriptedProvider(t, weatherReplies), nil)
	host := agenttest.NewHost()
	host.SetUsageError(fault.New(fault.BudgetExceeded, "budget", "token budget spent"))
	_, err := e.Execute(context.Background(), testRun(), host, boardWith(userMessage("hi")))
	require.ErrorIs(t, err, fault.BudgetExceeded)
	assert.Contains(t, err.Error(), "token budget spent")

	other := agenttest.NewHost()
	other.SetUsageError(fault.New(fault.NotAvailable, "meter", "meter offline"))
	_, err = e.Execute(context.Background(), testRun(), other, boardWith(userMessage("hi")))
	require.NoError(t, err, "a usage error other than BudgetExceeded is only observability")
}

// The request the provider gets: the model name, the resolved system
// prompt, the channel, the offered tools in the config's order and the
// tool choice.
func TestInferenceRequest(t *testing.T) {
	t.Parallel()
	rec := &recordingProvider{resp: model.Response{Message: message.NewTextMessage(message.RoleAssistant, "ok"),
		FinishReason: model.FinishStop}}
	doc := `
name: chat
entry: chat
nodes:
  - id: chat
    type: inference
    config:
      model: fast/mini
      messages_channel: talk
      system_prompt: "You help ${board.user}."
      tools: [get_time, get_weather]
      tool_choice: get_weather
`
	e := buildWith(t, parseDoc(t, doc), newFake(), graph.Options{Deps: map[string]any{
		graph.ModelDep + ".other": failingProvider{}, graph.ModelDep: rec,
		graph.ToolsDep: newFakeTools("get_weather", "get_time", "search"),
	}})
	board := agent.NewBoard()
	board.Vars["user"] = "Ada"
	board.Append("talk", userMessage("time?"))
	_, _, err := execute(t, e, board)
	require.NoError(t, err)
	reqs := rec.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "fast/mini", reqs[0].Model)
	assert.Equal(t, "You help Ada.", reqs[0].System)
	assert.Equal(t, []message.Message{userMessage("time?")}, reqs[0].Messages)
	require.Len(t, reqs[0].Tools, 2)
	assert.Equal(t, "get_time", reqs[0].Tools[0].Name)
	assert.Equal(t, "get_weather", reqs[0].Tools[1].Name)
	assert.Equal(t, "get_weather", reqs[0].ToolChoice)
}

func TestInferenceNamedProviderAndSystemPromptFile(t *testing.T) {
	t.Parallel()
	rec := &recordingProvider{resp: model.Response{Message: message.NewTextMessage(message.RoleAssistant, "ok")}}
	doc := `
name: chat
entry: chat
nodes:
  - id: chat
    type: inference
    config:
      model: {provider: local, name: llama3.2}
      system_prompt: {file: prompts/system.md}
`
	e := buildWith(t, parseDoc(t, doc), newFake(), graph.Options{
		Deps: map[string]any{graph.ModelDep: failingProvider{}, graph.ModelDep + ".local": rec},
		ResolveText: func(_ context.Context, raw json.RawMessage) (string, error) {
			assert.JSONEq(t, `{"file":"prompts/system.md"}`, string(raw))
			return "You are ${board.not_resolved}.", nil
		},
	})
	_, _, err := execute(t, e, boardWith(userMessage("hi")))
	require.NoError(t, err)
	reqs := rec.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "llama3.2", reqs[0].Model)
	assert.Equal(t, "You are ${board.not_resolved}.", reqs[0].System, "a prompt file is text, not a template")
}

func TestInferenceBuildErrors(t *testing.T) {
	t.Parallel()
	p := scriptedProvider(t, weatherReplies)
	tests := []struct {
		name, config string
		deps         map[string]any
		want         string
	}{
		{"unknown key", `{temperature: 0.2}`, nil, `unknown field "temperature"`},
		{"no provider", `{}`, map[string]any{}, `no dep "model" (bound: none)`},
		{"missing named provider", `{model: {provider: gpu}}`, nil, `no dep "model.gpu" (bound: model)`},
		{"not a provider", `{}`, map[string]any{graph.ModelDep: "text"}, "not a model.Provider"},
		{"model shape", `{model: [1]}`, nil, "model: want a model name, {id: {provider, name}, profile} or {provider, name}"},
		{"model unknown key", `{model: {ids: x}}`, nil, `unknown field "ids"`},
		{"tools without assembly", `{tools: [a]}`, nil, `no "tools" dep`},
		{"unknown tool", `{tools: [search]}`, map[string]any{graph.ModelDep: p, graph.ToolsDep: newFakeTools("a")},
			`tools[0]: the tool assembly has no tool "search"`},
		{"tool twice", `{tools: [a, a]}`, map[string]any{graph.ModelDep: p, graph.ToolsDep: newFakeTools("a")}, "listed twice"},
		{"tools and all", `{tools: [a], all_tools: true}`, map[string]any{graph.ModelDep: p, graph.ToolsDep: newFakeTools("a")},
			"not both"},
		{"choice not offered", `{tool_choice: a}`, nil, `tool_choice: "a" is not`},
		{"required without tools", `{tool_choice: required}`, nil, "required needs tools"},
		{"tools dep of another kind", `{all_tools: true}`, map[string]any{graph.ModelDep: p, graph.ToolsDep: 3}, "not a tool.Assembly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			deps := tt.deps
			if deps == nil {
				deps = map[string]any{graph.ModelDep: p}
			}
			doc := parseDoc(t, "name: g\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: "+tt.config+"\n")
			_, err := graph.Build(context.Background(), doc, graph.Options{Deps: deps})
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "nodes[0]")
		})
	}
}

func TestInferenceOnlyModelDepIsTheDefault(t *testing.T) {
	t.Parallel()
	e := buildWith(t, parseDoc(t, chatDoc), newFake(), graph.Options{Deps: map[string]any{
		graph.ModelDep + ".only": scriptedProvider(t, weatherReplies)}})
	_, board, err := execute(t, e, boardWith(userMessage("hi")))
	require.NoError(t, err)
	assert.Equal(t, "Hello there!", board.Vars["reply"])
}
