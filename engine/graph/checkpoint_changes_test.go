package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Script nodes' board writes travel with each wave's checkpoint as
// BoardChanges: the store keeps deltas, and every checkpoint it loads back
// is the board the wave left; a wave the engine cannot account for (here
// the resumed run's first) goes whole.
// REF 7.8.1
func TestCheckpointsCarryTheWavesChanges(t *testing.T) {
	t.Parallel()
	sources := []string{
		`board.setVar("a", 1); board.setVar("big", "x".repeat(5000));`,
		`board.setVar("a", board.getVar("a") + 1); board.appendChannel("main", [{role: "user", parts: [{type: "text", text: "hi"}]}]);`,
		`board.deleteVar("big"); board.appendChannel("main", [{role: "assistant", parts: [{type: "text", text: "hello"}]}]);`,
		`board.setChannel("side", [{role: "user", parts: [{type: "text", text: "new"}]}]); board.setVar("o", {k: [1, "two"]});`,
		`board.setChannel("main", []); board.appendChannel("main", [{role: "user", parts: [{type: "text", text: "again"}]}]);`,
		`board.setChannel("side", []); board.deleteVar("never");`,
	}
	doc := &graph.Document{Name: "changes", Entry: "n0"}
	for i, src := range sources {
		doc.Nodes = append(doc.Nodes, graph.Node{ID: fmt.Sprintf("n%d", i), Type: "script",
			Config: []byte(fmt.Sprintf(`{"source": %q}`, src))})
		if i > 0 {
			doc.Edges = append(doc.Edges, graph.Edge{From: fmt.Sprintf("n%d", i-1), To: fmt.Sprintf("n%d", i)})
		}
	}
	e, err := graph.Build(context.Background(), doc,
		graph.Options{Runtimes: map[string]sandbox.Runtime{"js": newJS(t)}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)

	v := newVerifyingHost(t)
	host := v.host
	run := testRun()
	_, err = e.Execute(context.Background(), run, host, agent.NewBoard())
	require.NoError(t, err)
	assert.Equal(t, 1, v.whole, "only the first checkpoint is whole")
	assert.Equal(t, len(sources)-1, v.deltas)

	// A run resumed from the third checkpoint: its first save holds the
	// whole board, the next ones deltas again, and the store follows.
	v.deltas, v.whole = 0, 0
	run.ResumeFrom = &v.saved[2]
	_, err = e.Execute(context.Background(), run, host, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, v.whole)
	assert.Equal(t, len(sources)-4, v.deltas)
}

// verifyingHost saves a run's checkpoints in a memory store and checks,
// after each, that the store loads the board the wave left.
type verifyingHost struct {
	host          agent.Host
	deltas, whole int
	saved         []agent.Checkpoint
}

func newVerifyingHost(t *testing.T) *verifyingHost {
	store := checkpoint.NewMemory()
	v := &verifyingHost{}
	v.host = &agent.HostFuncs{Inner: agent.NoopHost{}, CheckpointFn: func(ctx context.Context, cp agent.Checkpoint) error {
		if err := store.Save(ctx, cp); err != nil {
			return err
		}
		if cp.Changes != nil && cp.Changes.Base != 0 {
			v.deltas++
		} else {
			v.whole++
		}
		got, err := store.Load(ctx, cp.ExecID)
		require.NoError(t, err)
		want, err := json.Marshal(cp.Board)
		require.NoError(t, err)
		have, err := json.Marshal(got.Board)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(have), "the board after %v", cp.Steps)
		v.saved = append(v.saved, *got)
		return nil
	}}
	return v
}

// Inference nodes write the board themselves: the engine finds what they
// changed (the reply appended, the output and usage vars) by comparing the
// board around their step, and their waves are deltas too.
// REF 7.8.1
func TestInferenceWavesCarryTheirChanges(t *testing.T) {
	t.Parallel()
	doc := `
name: chat
entry: first
nodes:
  - id: first
    type: inference
    config: {model: {name: demo-1}, output_key: reply, usage_key: usage}
  - id: second
    type: inference
    config: {model: {name: demo-1}, output_key: reply2, messages_channel: side}
  - id: third
    type: inference
    config: {model: {name: demo-1}, output_key: reply, usage_key: usage, messages_channel: third}
edges:
  - {from: first, to: second}
  - {from: second, to: third}
`
	e := inferenceEngine(t, doc, scriptedProvider(t, weatherReplies), nil)
	v := newVerifyingHost(t)
	board := boardWith(userMessage("hi"))
	board.Append("side", userMessage("hello"))
	board.Channels["third"] = []message.Message{userMessage("hey")}
	board.Vars["big"] = strings.Repeat("b", 10000)
	_, err := e.Execute(context.Background(), testRun(), v.host, board)
	require.NoError(t, err)
	assert.Equal(t, 1, v.whole)
	assert.Equal(t, 2, v.deltas)
	require.Len(t, v.saved, 3)
	for _, name := range []string{agent.MainChannel, "side", "third"} {
		assert.Len(t, v.saved[2].Board.Channel(name), 2, name)
	}
}

// A parallel wave's merge is found by comparing the board around the
// wave: its checkpoint is a delta too, and loads as the merged board.
// REF 7.8.1
func TestParallelWavesCarryTheirChanges(t *testing.T) {
	t.Parallel()
	src := map[string]string{
		"start": `board.setVar("a", 1); board.setVar("big", "x".repeat(5000)); board.appendChannel("main", [{role: "user", parts: [{type: "text", text: "hi"}]}]); board.setChannel("side", [{role: "user", parts: [{type: "text", text: "s"}]}]);`,
		"b1":    `board.setVar("x1", {k: [1]}); board.appendChannel("main", [{role: "assistant", parts: [{type: "text", text: "one"}]}]);`,
		"b2":    `board.deleteVar("a"); board.setChannel("side", [{role: "user", parts: [{type: "text", text: "rewritten"}]}]);`,
		"b3":    `board.setVar("x3", "three");`,
		"end":   `board.setVar("done", true);`,
	}
	doc := &graph.Document{Name: "wide", Entry: "start"}
	for _, id := range []string{"start", "b1", "b2", "b3", "end"} {
		doc.Nodes = append(doc.Nodes, graph.Node{ID: id, Type: "script", Config: []byte(fmt.Sprintf(`{"source": %q}`, src[id]))})
	}
	for _, b := range []string{"b1", "b2", "b3"} {
		doc.Edges = append(doc.Edges, graph.Edge{From: "start", To: b}, graph.Edge{From: b, To: "end"})
	}
	opts := parallelOpts(graph.ParallelOptions{MaxBranches: 4})
	opts.Runtimes = map[string]sandbox.Runtime{"js": newJS(t)}
	opts.Logger = slog.New(slog.DiscardHandler)
	e, err := graph.Build(context.Background(), doc, opts)
	require.NoError(t, err)
	v := newVerifyingHost(t)
	board, err := e.Execute(context.Background(), testRun(), v.host, agent.NewBoard())
	require.NoError(t, err)
	assert.Equal(t, 1, v.whole, "only the first checkpoint is whole")
	assert.Equal(t, 2, v.deltas, "the parallel wave and the last one are deltas")
	assert.Equal(t, "rewritten", board.Channel("side")[0].Text())
	assert.NotContains(t, board.Vars, "a")
}
