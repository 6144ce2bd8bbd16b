package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tapeHost replays from a replaying journal: host calls, model replies
// (graph.TapeReplay) and tool results.
type tapeHost struct {
	*agenttest.Host
	journal *hostabi.Journal
}

var _ graph.InferenceReplayer = (*tapeHost)(nil)

func (h *tapeHost) Journal() *hostabi.Journal { return h.journal }
func (h *tapeHost) ReplayInference(node string, args json.RawMessage) (graph.InferenceRecord, error) {
	return graph.TapeReplay{J: h.journal}.ReplayInference(node, args)
}

// REF 10.1.3, REF 10.2.1: a replaying journal answers a tool node's calls
// with the recorded results, without running the tools (the tools the
// replay has fail every call), and the board comes out the same.
func TestToolNodeReplaysRecordedResults(t *testing.T) {
	t.Parallel()
	rt := newJS(t)
	live := buildWith(t, parseDoc(t, toolGraph), rt, graph.Options{Deps: map[string]any{"tools": newToolAssembly(t, rt)}})
	rec := newToolHost()
	board := agent.NewBoard()
	board.Append(agent.MainChannel, userMessage("weather in Oslo, and 2+3?"))
	first, err := live.Execute(context.Background(), testRun(), rec, board.Clone())
	require.NoError(t, err)

	fake := newFakeTools("weather", "add")
	replayed := buildWith(t, parseDoc(t, toolGraph), rt, graph.Options{Deps: map[string]any{"tools": fake}})
	host := &tapeHost{Host: agenttest.NewHost(), journal: hostabi.NewReplayJournal(rec.journal.Entries())}
	second, err := replayed.Execute(context.Background(), testRun(), host, board.Clone())
	require.NoError(t, err)
	assert.Zero(t, fake.executions(), "a replay never runs a tool")
	assert.Equal(t, first.Channels, second.Channels)
	assert.Equal(t, first.Vars, second.Vars)
	assert.Nil(t, host.journal.Divergence())

	// A recording without the results fails closed at the tool node.
	host = &tapeHost{Host: agenttest.NewHost(), journal: hostabi.NewReplayJournal(nil)}
	_, err = replayed.Execute(context.Background(), testRun(), host, board.Clone())
	var div *hostabi.DivergenceError
	require.True(t, errors.As(err, &div), "%v", err)
	assert.Equal(t, "tools", div.Node)
	assert.Equal(t, graph.ToolJournalFunc, div.Func)
}

// REF 10.2.2: TapeReplay answers an inference node from the recording and
// reports a changed request as a divergence at the node's call.
func TestTapeReplayInference(t *testing.T) {
	t.Parallel()
	doc := "\nname: chat\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: {model: demo-1, stream: true, all_tools: true, output_key: reply}\n"
	tools := newFakeTools("get_weather")
	rec := &journalHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal()}
	first, err := inferenceEngine(t, doc, scriptedProvider(t, weatherReplies), tools).Execute(context.Background(), testRun(), rec, boardWith(userMessage("weather?")))
	require.NoError(t, err)

	e := inferenceEngine(t, doc, failingProvider{}, tools)
	host := &tapeHost{Host: agenttest.NewHost(), journal: hostabi.NewReplayJournal(rec.journal.Entries())}
	second, err := e.Execute(context.Background(), testRun(), host, boardWith(userMessage("weather?")))
	require.NoError(t, err)
	assert.Equal(t, first.Channels, second.Channels)
	assert.Equal(t, deltaPayloads(rec.Host), deltaPayloads(host.Host))

	host = &tapeHost{Host: agenttest.NewHost(), journal: hostabi.NewReplayJournal(rec.journal.Entries())}
	_, err = e.Execute(context.Background(), testRun(), host, boardWith(userMessage("rain?")))
	var div *hostabi.DivergenceError
	require.True(t, errors.As(err, &div), "%v", err)
	assert.Equal(t, "chat", div.Node)
	assert.Equal(t, 1, div.Call)
	assert.Equal(t, graph.JournalFuncInference, div.Func)
}
