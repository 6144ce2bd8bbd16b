package graph_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/require"
)

// chainDoc is a chain of n script nodes, each running source.
func chainDoc(n int, source string) *graph.Document {
	doc := &graph.Document{Name: "chain", Entry: "n0"}
	for i := range n {
		doc.Nodes = append(doc.Nodes, graph.Node{ID: fmt.Sprintf("n%d", i), Type: "script",
			Config: []byte(fmt.Sprintf(`{"source": %q}`, source))})
		if i > 0 {
			doc.Edges = append(doc.Edges, graph.Edge{From: fmt.Sprintf("n%d", i-1), To: fmt.Sprintf("n%d", i)})
		}
	}
	return doc
}

// checkpointHost is a host whose checkpoints go to store.
func checkpointHost(store agent.CheckpointStore) agent.Host {
	return &agent.HostFuncs{Inner: agent.NoopHost{}, CheckpointFn: store.Save}
}

// benchChain runs a 10-node chain per iteration on rt.
func benchChain(b *testing.B, rt sandbox.Runtime, source string) {
	e, err := graph.Build(context.Background(), chainDoc(10, source),
		graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(b, err)
	ws, err := workspace.NewLocal(b.TempDir())
	require.NoError(b, err)
	disk, err := checkpoint.NewStore(ws, "")
	require.NoError(b, err)
	hosts := []struct {
		name string
		host agent.Host
	}{
		{"no-store", agent.NoopHost{}},
		{"memory-store", checkpointHost(checkpoint.NewMemory())},
		{"workspace-store", checkpointHost(disk)},
	}
	for _, h := range hosts {
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			run := agent.Run{ID: "run-bench", AgentID: "bench", Attempt: 1}
			for b.Loop() {
				board := agent.NewBoard()
				if _, err := e.Execute(context.Background(), run, h.host, board); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChain10 measures the engine alone: ten trivial nodes on a
// runtime that does nothing but set one var.
func BenchmarkChain10(b *testing.B) {
	benchChain(b, noopRuntime{}, "noop")
}

// noopRuntime sets one var per call and evaluates nothing.
type noopRuntime struct{}

func (noopRuntime) Name() string { return "noop" }

func (noopRuntime) Invoke(_ context.Context, inv sandbox.Invocation) error {
	inv.Board.Vars["x"] = 1.0
	return nil
}

func (noopRuntime) Eval(context.Context, sandbox.Evaluation) (any, error) { return true, nil }

// BenchmarkFloor10Calls is the floor the chains are compared with, in the
// same run: ten calls of a script function in one goja VM made once
// (js.NewFloor, as sandbox/js measures it).
func BenchmarkFloor10Calls(b *testing.B) {
	f, err := js.NewFloor()
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Call(10); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChain10JS runs the same chain on the goja runtime: ten trivial
// scripts per Execute.
func BenchmarkChain10JS(b *testing.B) {
	benchChain(b, newJS(b), `board.setVar("x", 1)`)
}
