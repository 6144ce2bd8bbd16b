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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deltaPayloads returns the payloads of the stream deltas host saw.
func deltaPayloads(host *agenttest.Host) []string {
	var out []string
	for _, env := range host.Envelopes() {
		if event.IsStreamDelta(env.Subject) {
			out = append(out, string(env.Payload))
		}
	}
	return out
}

// Model replies are non-deterministic inputs: each call is journaled with
// a digest of its request, and a replaying host feeds the recorded reply
// back, so the replay writes the same board and publishes the same deltas
// without calling the provider.
func TestInferenceJournalAndReplay(t *testing.T) {
	t.Parallel()
	// REF 5.3.1 (the reply, tool calls included, is appended; deltas published as they arrive)
	doc := `
name: chat
entry: chat
nodes:
  - id: chat
    type: inference
    config: {model: demo-1, stream: true, all_tools: true, output_key: reply}
`
	tools := newFakeTools("get_weather")
	rec := &journalHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal()}
	e := inferenceEngine(t, doc, scriptedProvider(t, weatherReplies), tools)
	first, err := e.Execute(context.Background(), testRun(), rec, boardWith(userMessage("weather?")))
	require.NoError(t, err)

	entries := rec.journal.Entries()
	require.Len(t, entries, 1)
	entry := entries[0]
	assert.Equal(t, "chat", entry.Node)
	assert.Equal(t, graph.JournalFuncInference, entry.Func)
	var args []graph.InferenceArgs
	require.NoError(t, json.Unmarshal(entry.Args, &args))
	require.Len(t, args, 1)
	assert.Equal(t, graph.ModelDep, args[0].Provider)
	assert.Equal(t, "demo-1", args[0].Model)
	assert.True(t, args[0].Stream)
	assert.Equal(t, 1, args[0].Messages)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, args[0].Digest)
	var record graph.InferenceRecord
	require.NoError(t, json.Unmarshal(entry.Result, &record))
	require.NotNil(t, record.Message)
	assert.Equal(t, first.Channel(agent.MainChannel)[1], *record.Message)
	assert.Len(t, record.Deltas, 3)

	// The replay: the provider must not be called.
	replay := replayingHost{&journalHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal(),
		replay: graph.NewJournalReplay(rec.journal)}}
	e2 := inferenceEngine(t, doc, failingProvider{}, tools)
	second, err := e2.Execute(context.Background(), testRun(), replay, boardWith(userMessage("weather?")))
	require.NoError(t, err)
	assert.Equal(t, first.Vars, second.Vars)
	assert.Equal(t, first.Channels, second.Channels)
	assert.Equal(t, deltaPayloads(rec.Host), deltaPayloads(replay.Host))
	again := replay.journal.Entries()
	require.Len(t, again, 1)
	assert.JSONEq(t, string(entry.Args), string(again[0].Args))
	assert.JSONEq(t, string(entry.Result), string(again[0].Result), "the replay records the same journal")

	// A run that asks something else diverges at the node and call.
	diverged := replayingHost{&journalHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal(),
		replay: graph.NewJournalReplay(rec.journal)}}
	_, err = e2.Execute(context.Background(), testRun(), diverged, boardWith(userMessage("weather in Paris?")))
	require.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), `node "chat" call 1 (journal entry 1): the run diverged`)
}

// A failed call is journaled with its error and the deltas it streamed;
// the replay fails the same way and commits the same partial text.
func TestInferenceJournalsFailures(t *testing.T) {
	t.Parallel()
	p := scriptedProvider(t, "replies: [{text: 'cut short', error: {kind: rate_limit, message: slow down}}]")
	rec := &journalHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal()}
	_, err := inferenceEngine(t, chatDoc, p, nil).Execute(context.Background(), testRun(), rec, boardWith(userMessage("x")))
	require.ErrorIs(t, err, fault.RateLimit)
	var record graph.InferenceRecord
	require.NoError(t, json.Unmarshal(rec.journal.Entries()[0].Result, &record))
	require.NotNil(t, record.Error)
	assert.Equal(t, "rate_limit", record.Error.Code)
	assert.Nil(t, record.Message)

	replay := replayingHost{&journalHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal(),
		replay: graph.NewJournalReplay(rec.journal)}}
	board, err := inferenceEngine(t, chatDoc, failingProvider{}, nil).Execute(context.Background(), testRun(), replay,
		boardWith(userMessage("x")))
	require.ErrorIs(t, err, fault.RateLimit)
	assert.Equal(t, message.NewTextMessage(message.RoleAssistant, "cut short"), board.Channel(agent.MainChannel)[1])
	assert.Equal(t, deltaPayloads(rec.Host), deltaPayloads(replay.Host))

	_, err = inferenceEngine(t, chatDoc, failingProvider{}, nil).Execute(context.Background(), testRun(), replay,
		boardWith(userMessage("x")))
	require.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "the journal has no reply for it")
}
