package graph_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recoveryEngine builds testdata/graph/inference/recovery.yaml with the
// scripted provider of recovery-replies.yaml and a get_weather tool.
func recoveryEngine(t *testing.T) *graph.Engine {
	t.Helper()
	replies, err := os.ReadFile(filepath.Join(testdata, "inference", "recovery-replies.yaml"))
	require.NoError(t, err)
	return buildWith(t, loadDoc(t, "inference/recovery.yaml"), newFake(), graph.Options{Deps: map[string]any{
		graph.ModelDep: scriptedProvider(t, string(replies)), graph.ToolsDep: newFakeTools("get_weather")}})
}

// REF 8.7: a call to a tool the node does not offer is answered
// with an error result keeping the model's call id; recover_pending loops
// back to the node, which asks again and gets the right call.
func TestInferenceUndefinedToolRecoveryLoop(t *testing.T) {
	t.Parallel()
	_, board, err := execute(t, recoveryEngine(t), boardWith(userMessage("weather?")))
	require.NoError(t, err)
	main := board.Channel(agent.MainChannel)
	require.Len(t, main, 4)
	assert.Equal(t, []message.ToolCall{{ID: "call_1", Name: "get_wether", Arguments: `{"city":"Lyon"}`}}, main[1].ToolCalls())
	assert.Equal(t, message.Message{Role: message.RoleTool, Parts: []message.Part{
		message.ToolResultPart("call_1", `tool "get_wether" is not defined; available: get_weather`, true)}}, main[2])
	assert.Equal(t, []message.ToolCall{{ID: "call_2", Name: "get_weather", Arguments: `{"city":"Lyon"}`}}, main[3].ToolCalls())
	assert.Equal(t, false, board.Vars[graph.DefaultRecoverPendingKey])
	assert.Equal(t, 1.0, board.Vars[graph.DefaultRecoverCountKey])
	assert.Equal(t, true, board.Vars[graph.DefaultToolPendingKey])
}

// The recovery is part of the replayed run: the journal holds the model's
// replies, and a replay writes the same board without the provider.
func TestInferenceUndefinedToolRecoveryReplays(t *testing.T) {
	t.Parallel()
	e := recoveryEngine(t)
	rec := &journalHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal()}
	first, err := e.Execute(context.Background(), testRun(), rec, boardWith(userMessage("weather?")))
	require.NoError(t, err)
	require.Len(t, rec.journal.Entries(), 2)

	replay := buildWith(t, loadDoc(t, "inference/recovery.yaml"), newFake(), graph.Options{Deps: map[string]any{
		graph.ModelDep: failingProvider{}, graph.ToolsDep: newFakeTools("get_weather")}})
	host := replayingHost{&journalHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal(),
		replay: graph.NewJournalReplay(rec.journal)}}
	second, err := replay.Execute(context.Background(), testRun(), host, boardWith(userMessage("weather?")))
	require.NoError(t, err)
	assert.Equal(t, first.Channel(agent.MainChannel), second.Channel(agent.MainChannel))
	assert.Equal(t, first.Vars, second.Vars)
}

// REF 8.7: undefined calls without recovery, or past max_per_run,
// fail the node with ErrUndefinedTool (a Validation error) naming the tool
// and the node.
func TestInferenceUndefinedToolErrors(t *testing.T) {
	t.Parallel()
	const always = `
fallback:
  tool_calls: [{id: c1, name: nope}]
`
	tests := []struct {
		name, config string
		want         string
	}{
		{"disabled", `{tools: [a, b]}`, `node "chat": the reply calls tool "nope", which the node does not offer (available: a, b)`},
		{"explicitly disabled", `{tools: [a], undefined_tool_recovery: {enabled: false}}`, `tool "nope"`},
		{"no tools offered", `{}`, `(available: none)`},
		{"max per run", `{tools: [a], undefined_tool_recovery: {enabled: true, max_per_run: 1}}`, "after 1 of 1 recoveries"},
		{"default max", `{tools: [a], undefined_tool_recovery: {enabled: true}}`, "after 2 of 2 recoveries"},
		{"zero max", `{tools: [a], undefined_tool_recovery: {enabled: true, max_per_run: 0}}`, "after 0 of 0 recoveries"},
		{"own count key", `{tools: [a], undefined_tool_recovery: {enabled: true, max_per_run: 1}, recover_count_key: tries, recover_pending_key: again}`,
			"after 1 of 1 recoveries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := "name: g\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: " + tt.config +
				"\nedges:\n  - {from: chat, to: chat, condition: recover_pending == true || again == true}\n"
			e := inferenceEngine(t, doc, scriptedProvider(t, always), newFakeTools("a", "b"))
			_, _, err := execute(t, e, boardWith(userMessage("hi")))
			require.ErrorIs(t, err, graph.ErrUndefinedTool)
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), `"chat"`)
		})
	}
}

// REF 8.7: in a reply that mixes offered and undefined calls, every
// call gets a result (the offered ones are not run), so the conversation
// stays well formed; a reply without undefined calls clears
// recover_pending.
func TestInferenceUndefinedToolMixedCalls(t *testing.T) {
	t.Parallel()
	p := scriptedProvider(t, `
replies:
  - on: user
    tool_calls: [{id: c1, name: a}, {id: c2, name: zz}]
fallback:
  text: fine
`)
	doc := `
name: g
entry: chat
nodes:
  - id: chat
    type: inference
    config: {tools: [a, b], undefined_tool_recovery: {enabled: true}, recover_pending_key: again, recover_count_key: tries}
edges:
  - {from: chat, to: chat, condition: again == true}
`
	tools := newFakeTools("a", "b")
	e := inferenceEngine(t, doc, p, tools)
	_, board, err := execute(t, e, boardWith(userMessage("hi")))
	require.NoError(t, err)
	main := board.Channel(agent.MainChannel)
	require.Len(t, main, 4)
	assert.Equal(t, message.Message{Role: message.RoleTool, Parts: []message.Part{
		message.ToolResultPart("c1", `tool "a" was not run: the same reply called an undefined tool; call it again if needed`, true),
		message.ToolResultPart("c2", `tool "zz" is not defined; available: a, b`, true),
	}}, main[2])
	assert.Equal(t, "fine", main[3].Text())
	assert.Equal(t, false, board.Vars["again"])
	assert.Equal(t, 1.0, board.Vars["tries"])
	assert.NotContains(t, board.Vars, graph.DefaultRecoverPendingKey)
	assert.Zero(t, tools.executions())
}

func TestInferenceRecoveryBuildErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, config, want string }{
		{"negative max", `{undefined_tool_recovery: {enabled: true, max_per_run: -1}}`, "max_per_run: must not be negative"},
		{"unknown key", `{undefined_tool_recovery: {on: true}}`, `unknown field "on"`},
		{"same keys", `{recover_pending_key: x, recover_count_key: x}`, `are both "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := parseDoc(t, "name: g\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: "+tt.config+"\n")
			_, err := graph.Build(context.Background(), doc, graph.Options{Deps: map[string]any{graph.ModelDep: failingProvider{}}})
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
