package graph_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/require"
)

// BenchmarkInferenceNode runs a one-node graph per iteration: the baseline
// is a script node on a runtime that does nothing but set one var; the
// others are an inference node answered by the scripted provider, unary
// and streamed (one delta per word of a twelve-word reply).
func BenchmarkInferenceNode(b *testing.B) {
	p := scriptedProvider(b, `
replies:
  - text: "The scripted provider answers with this twelve word reply for the benchmark."
    usage: {input: 12, output: 12}
`)
	cases := []struct{ name, typ, config string }{
		{"script-noop", "script", `{"source": "noop"}`},
		{"inference-scripted", "inference", `{"output_key": "reply"}`},
		{"inference-scripted-stream", "inference", `{"output_key": "reply", "stream": true}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			doc := &graph.Document{Name: "bench", Entry: "n", Nodes: []graph.Node{{ID: "n", Type: c.typ, Config: []byte(c.config)}}}
			e, err := graph.Build(context.Background(), doc, graph.Options{
				Runtimes: map[string]sandbox.Runtime{"js": noopRuntime{}}, Deps: map[string]any{graph.ModelDep: p},
				Logger: slog.New(slog.DiscardHandler)})
			require.NoError(b, err)
			run := agent.Run{ID: "run-bench", AgentID: "bench", Attempt: 1}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Execute(context.Background(), run, agent.NoopHost{}, boardWith(userMessage("hello"))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
