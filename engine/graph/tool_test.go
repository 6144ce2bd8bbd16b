package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolGraph has a script node stand in for a model: it appends an
// assistant message with two tool calls, which the tool node runs.
const toolGraph = `
name: tooluse
entry: model
nodes:
  - id: model
    type: script
    config:
      source: |
        board.appendChannel(board.MAIN_CHANNEL, {role: "assistant", parts: [
          {type: "text", text: "let me check"},
          {type: "tool_call", tool_call: {id: "call_w", name: "weather", arguments: '{"city":"Oslo"}'}},
          {type: "tool_call", tool_call: {id: "call_a", name: "add", arguments: '{"a":2,"b":"3"}'}}]});
  - id: tools
    type: tool
    config: {results_key: results}
edges:
  - {from: model, to: tools}
`

// newToolAssembly returns the weather and add tools in rt.
func newToolAssembly(t testing.TB, rt sandbox.Runtime) *tools.Assembly {
	t.Helper()
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	a, err := tools.New(context.Background(), tools.Settings{Tools: []tools.ToolSettings{
		{Name: "weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
			Source: str(`host.emit("token", "looking up " + config.city); return {city: config.city, temp_c: 21}`)},
		{Name: "add", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`),
			Source: str(`return config.a + config.b`)},
	}}, map[string]sandbox.Runtime{"js": rt})
	require.NoError(t, err)
	return a
}

// toolHost is a recording host that hands over a journal and records log
// lines.
type toolHost struct {
	*agenttest.Host
	journal *hostabi.Journal
	mu      sync.Mutex
	logs    []string
}

func newToolHost() *toolHost {
	return &toolHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal()}
}

func (h *toolHost) Journal() *hostabi.Journal { return h.journal }

func (h *toolHost) Log(_ context.Context, level, msg string, _ map[string]any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, level+": "+msg)
}

func (h *toolHost) logLines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.logs...)
}

// End to end: a model's reply with two tool calls runs through the tool
// node; the channel gets one tool message with the results under the same
// call ids, results_key the raw results, the stream a tool_result delta
// per result, and the journal each result.
func TestToolNodeEndToEnd(t *testing.T) {
	t.Parallel()
	// REF 5.3.2 (executes the whole batch, keeping the model's call ids)
	// REF 5.3.2 (appends one role=tool message and writes raw results to results_key)
	// REF 5.3.2 (each result is published as a delta)
	rt := newJS(t)
	e := buildWith(t, parseDoc(t, toolGraph), rt, graph.Options{Deps: map[string]any{"tools": newToolAssembly(t, rt)}})
	host := newToolHost()
	board := agent.NewBoard()
	board.Append(agent.MainChannel, userMessage("weather in Oslo, and 2+3?"))
	out, err := e.Execute(context.Background(), testRun(), host, board)
	require.NoError(t, err)

	main := out.Channel(agent.MainChannel)
	require.Len(t, main, 3)
	toolMsg := main[2]
	assert.Equal(t, message.RoleTool, toolMsg.Role)
	require.Len(t, toolMsg.Parts, 2)
	assert.Equal(t, &message.ToolResult{ToolCallID: "call_w", Content: `{"city":"Oslo","temp_c":21}`}, toolMsg.Parts[0].ToolResult)
	assert.Equal(t, "call_a", toolMsg.Parts[1].ToolResult.ToolCallID)
	assert.True(t, toolMsg.Parts[1].ToolResult.IsError, "b is a string: the schema refuses the call")
	assert.Contains(t, toolMsg.Parts[1].ToolResult.Content, "$.b: want number, got string")

	assert.Equal(t, []any{
		map[string]any{"tool_call_id": "call_w", "name": "weather", "content": `{"city":"Oslo","temp_c":21}`, "is_error": false},
		map[string]any{"tool_call_id": "call_a", "name": "add", "content": toolMsg.Parts[1].ToolResult.Content, "is_error": true},
	}, out.Vars["results"])

	var results []*message.ToolResult
	var tokens []string
	for _, d := range deltas(t, host.Host) {
		require.NotNil(t, d.Part)
		switch d.Part.Type {
		case message.PartToolResult:
			results = append(results, d.Part.ToolResult)
		case message.PartText:
			tokens = append(tokens, d.Part.Text)
		}
		assert.False(t, d.Speculative)
	}
	require.Len(t, results, 2)
	assert.Equal(t, toolMsg.Parts[0].ToolResult, results[0])
	assert.Equal(t, toolMsg.Parts[1].ToolResult, results[1])
	assert.Equal(t, []string{"looking up Oslo"}, tokens, "a tool's own emit goes through the node's host ABI")
	for _, env := range host.Envelopes() {
		if event.IsStreamDelta(env.Subject) {
			assert.Equal(t, "tools", env.Header(event.HeaderNodeID))
			assert.Equal(t, event.SubjectStreamDelta("run-1", event.Actor("bot", "tools")), env.Subject)
		}
	}

	var journaled []string
	for _, en := range host.journal.Entries() {
		if en.Func == graph.ToolJournalFunc {
			assert.Equal(t, "tools", en.Node)
			var r message.ToolResult
			require.NoError(t, json.Unmarshal(en.Result, &r))
			var args []message.ToolCall
			require.NoError(t, json.Unmarshal(en.Args, &args))
			require.Len(t, args, 1)
			assert.Equal(t, args[0].ID, r.ToolCallID)
			journaled = append(journaled, r.ToolCallID)
		}
	}
	assert.Equal(t, []string{"call_w", "call_a"}, journaled, "tool results are journaled in call order")
}

// The tail of the channel must be an assistant message with at least one
// tool call.
func TestToolNodeTail(t *testing.T) {
	t.Parallel()
	// REF 5.3.2 (the tail must be an assistant message with at least one tool_call part)
	rt := newJS(t)
	doc := parseDoc(t, `
name: t
entry: tools
nodes:
  - {id: tools, type: tool, config: {messages_channel: work}}
`)
	e := buildWith(t, doc, rt, graph.Options{Deps: map[string]any{"tools": newToolAssembly(t, rt)}})
	withCall := message.Message{Role: message.RoleAssistant, Parts: []message.Part{message.ToolCallPart("c1", "add", `{"a":1,"b":2}`)}}
	cases := []struct {
		name string
		msgs []message.Message
		err  string
	}{
		{"empty", nil, `channel "work" is empty`},
		{"user tail", []message.Message{userMessage("hi")}, "is a user message with 0 tool calls"},
		{"assistant without calls", []message.Message{message.NewTextMessage(message.RoleAssistant, "done")},
			"is a assistant message with 0 tool calls"},
		{"calls not at the tail", []message.Message{withCall, userMessage("and?")}, "is a user message"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			board := agent.NewBoard()
			board.Append("work", tc.msgs...)
			_, _, err := execute(t, e, board)
			require.ErrorIs(t, err, fault.Validation)
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, "tools", ne.Node)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
	board := agent.NewBoard()
	board.Append("work", withCall)
	_, out, err := execute(t, e, board)
	require.NoError(t, err)
	work := out.Channel("work")
	require.Len(t, work, 2)
	assert.Equal(t, "3", work[1].Parts[0].ToolResult.Content)
	assert.Empty(t, out.Channel(agent.MainChannel))
}

// A failed delta publish is only logged: the node and the run succeed.
func TestToolNodePublishFailureIsLogged(t *testing.T) {
	t.Parallel()
	// REF 5.3.2 (a publish failure is only logged)
	rt := newJS(t)
	e := buildWith(t, parseDoc(t, toolGraph), rt, graph.Options{Deps: map[string]any{"tools": newToolAssembly(t, rt)}})
	host := newToolHost()
	host.SetPublishError(func(_ context.Context, env event.Envelope) error {
		if event.IsStreamDelta(env.Subject) && env.Header(event.HeaderNodeID) == "tools" {
			var d event.StreamDeltaPayload
			if env.Decode(&d) == nil && d.Part != nil && d.Part.Type == message.PartToolResult {
				return errors.New("sink gone")
			}
		}
		return nil
	})
	out, err := e.Execute(context.Background(), testRun(), host, agent.NewBoard())
	require.NoError(t, err)
	require.Len(t, out.Channel(agent.MainChannel), 2)
	assert.Equal(t, []string{"warn: tool node: result delta not published", "warn: tool node: result delta not published"},
		host.logLines())
}

// Without a tools dependency the tool node asks the host's catalog (the
// runtime's dynamic_catalog.tools) for the run's agent's assembly; with
// neither it fails with NotFound.
func TestToolNodeCatalog(t *testing.T) {
	t.Parallel()
	// REF 1.2.9 (agents without a mapping of their own use default)
	rt := newJS(t)
	e := buildWith(t, parseDoc(t, toolGraph), rt, graph.Options{})
	cat := tool.NewCatalog(map[string]tool.Assembly{tool.DefaultAgent: newToolAssembly(t, rt)})
	out, err := e.Execute(context.Background(), testRun(), tool.WithCatalog(agenttest.NewHost(), cat), agent.NewBoard())
	require.NoError(t, err)
	main := out.Channel(agent.MainChannel)
	require.Len(t, main, 2)
	assert.Equal(t, message.RoleTool, main[1].Role)

	_, _, err = execute(t, e, nil)
	require.ErrorIs(t, err, fault.NotFound)
	assert.Contains(t, err.Error(), `no tool assembly for agent "bot"`)
}

// The engine's tools dependency wins over the catalog; a dependency that
// is not a tool.Assembly fails the build.
func TestToolNodeDependency(t *testing.T) {
	t.Parallel()
	rt := newJS(t)
	e := buildWith(t, parseDoc(t, toolGraph), rt, graph.Options{Deps: map[string]any{"tools": newToolAssembly(t, rt)}})
	other := &fixedAssembly{results: func(b tool.Batch) []message.ToolResult { panic("the catalog was asked") }}
	host := tool.WithCatalog(agenttest.NewHost(), tool.NewCatalog(map[string]tool.Assembly{"bot": other}))
	_, err := e.Execute(context.Background(), testRun(), host, agent.NewBoard())
	require.NoError(t, err)

	_, err = graph.Build(context.Background(), parseDoc(t, toolGraph), graph.Options{
		Runtimes: map[string]sandbox.Runtime{"js": rt}, Deps: map[string]any{"tools": "not an assembly"}})
	require.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "deps.tools: string is not a tool.Assembly")

	_, err = graph.Build(context.Background(), parseDoc(t, `
name: t
entry: tools
nodes: [{id: tools, type: tool, config: {results_key: __mine}}]
`), graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt}})
	require.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "results_key")
}

// An assembly that breaks its contract (a missing result, another id) is
// an Internal error; a batch error keeps its kind.
func TestToolNodeAssemblyContract(t *testing.T) {
	t.Parallel()
	rt := newJS(t)
	cases := []struct {
		name    string
		asm     *fixedAssembly
		kind    *fault.Kind
		message string
	}{
		{"too few", &fixedAssembly{results: func(tool.Batch) []message.ToolResult {
			return []message.ToolResult{{ToolCallID: "call_w"}}
		}}, fault.Internal, "returned 1 results for 2 calls"},
		{"other id", &fixedAssembly{results: func(tool.Batch) []message.ToolResult {
			return []message.ToolResult{{ToolCallID: "call_w"}, {ToolCallID: "x"}}
		}}, fault.Internal, `result 1 answers call "x", want "call_a"`},
		{"batch error", &fixedAssembly{err: agent.Interrupted(agent.Interrupt{Cause: agent.CauseUserCancel})},
			fault.Interrupted, "interrupted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := buildWith(t, parseDoc(t, toolGraph), rt, graph.Options{Deps: map[string]any{"tools": tc.asm}})
			_, out, err := execute(t, e, nil)
			require.ErrorIs(t, err, tc.kind)
			assert.Contains(t, err.Error(), tc.message)
			assert.Len(t, out.Channel(agent.MainChannel), 1, "no tool message")
		})
	}
}

// Inside a parallel wave the tool node's deltas are speculative, marked
// with the fork and its branch.
func TestToolNodeParallelDeltas(t *testing.T) {
	t.Parallel()
	rt := newJS(t)
	doc := parseDoc(t, toolGraph+`
  - {from: model, to: side}
`)
	doc.Nodes = append(doc.Nodes, graph.Node{ID: "side", Type: "script", Config: json.RawMessage(`{"source":"board.setVar('side', 1)"}`)})
	e := buildWith(t, doc, rt, graph.Options{Deps: map[string]any{"tools": newToolAssembly(t, rt)},
		Parallel: graph.ParallelOptions{Enabled: true}})
	host, out, err := execute(t, e, nil)
	require.NoError(t, err)
	require.Len(t, out.Channel(agent.MainChannel), 2)
	var n int
	for _, d := range deltas(t, host) {
		if d.Part != nil && d.Part.Type == message.PartToolResult {
			n++
			assert.True(t, d.Speculative)
			assert.NotEmpty(t, d.ForkID)
			assert.Equal(t, "tools", d.BranchID)
		}
	}
	assert.Equal(t, 2, n)
}

// fixedAssembly answers every batch with results(b), or err.
type fixedAssembly struct {
	results func(b tool.Batch) []message.ToolResult
	err     error
}

func (a *fixedAssembly) Definitions() []tool.Definition { return nil }

func (a *fixedAssembly) Execute(_ context.Context, b tool.Batch) ([]message.ToolResult, error) {
	if a.err != nil {
		return nil, a.err
	}
	return a.results(b), nil
}

// The step's host ABI enforces the assembly's own limits: a tool that
// emits past the assembly's max_events gets an error result.
func TestToolNodeAssemblyLimits(t *testing.T) {
	t.Parallel()
	rt := newJS(t)
	asm, err := tools.New(context.Background(), tools.Settings{Limits: tools.LimitSettings{MaxEvents: 1},
		Tools: []tools.ToolSettings{
			{Name: "weather", Source: json.RawMessage(`"host.emit('token', 'a'); host.emit('token', 'b'); return 'never'"`)},
			{Name: "add", Source: json.RawMessage(`"return 5"`)},
		}}, map[string]sandbox.Runtime{"js": rt})
	require.NoError(t, err)
	e := buildWith(t, parseDoc(t, toolGraph), rt, graph.Options{Deps: map[string]any{"tools": asm}})
	_, out, err := execute(t, e, nil)
	require.NoError(t, err)
	parts := out.Channel(agent.MainChannel)[1].Parts
	assert.True(t, parts[0].ToolResult.IsError)
	assert.Contains(t, parts[0].ToolResult.Content, "max_events limit of 1 exceeded")
	assert.Equal(t, "5", parts[1].ToolResult.Content)
}

// The events, checkpoints and board of a tool run, as a golden transcript
// (testdata/graph/tool-run.golden; -update rewrites it).
func TestToolNodeTranscript(t *testing.T) {
	t.Parallel()
	rt := newJS(t)
	e := buildWith(t, parseDoc(t, toolGraph), rt, graph.Options{Deps: map[string]any{"tools": newToolAssembly(t, rt)}})
	host, out, err := execute(t, e, nil)
	golden(t, "tool-run.golden", transcript(t, host, out, err))
}
