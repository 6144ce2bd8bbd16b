package graph_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

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

type benchHost struct {
	name string
	host agent.Host
}

// benchHosts are the hosts of the chain benchmarks: no checkpoint store,
// one in memory, one writing files.
func benchHosts(b *testing.B) []benchHost {
	ws, err := workspace.NewLocal(b.TempDir())
	require.NoError(b, err)
	disk, err := checkpoint.NewStore(ws, "")
	require.NoError(b, err)
	return []benchHost{
		{"no-store", agent.NoopHost{}},
		{"memory-store", checkpointHost(checkpoint.NewMemory())},
		{"workspace-store", checkpointHost(disk)},
	}
}

// benchChain runs a 10-node chain per iteration on rt.
func benchChain(b *testing.B, rt sandbox.Runtime, source string) {
	e, err := graph.Build(context.Background(), chainDoc(10, source),
		graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(b, err)
	for _, h := range benchHosts(b) {
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

// BenchmarkChain10VsFloor reports each chain against the floor measured
// alternately with it, one run of each per iteration, so that the ratio
// (x-floor) holds even when other work shares the machine: ns/op is a
// chain and a floor together, floor-ns the floor alone.
func BenchmarkChain10VsFloor(b *testing.B) {
	jsRT := newJS(b)
	for _, rt := range []struct {
		name   string
		rt     sandbox.Runtime
		source string
	}{{"engine", noopRuntime{}, "noop"}, {"js", jsRT, `board.setVar("x", 1)`}} {
		e, err := graph.Build(context.Background(), chainDoc(10, rt.source),
			graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt.rt}, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(b, err)
		for _, h := range benchHosts(b) {
			b.Run(rt.name+"/"+h.name, func(b *testing.B) { benchVsFloor(b, e, h.host) })
		}
	}
}

func benchVsFloor(b *testing.B, e *graph.Engine, host agent.Host) {
	f, err := js.NewFloor()
	require.NoError(b, err)
	run := agent.Run{ID: "run-bench", AgentID: "bench", Attempt: 1}
	var chain, floor time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if _, err := f.Call(10); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := e.Execute(context.Background(), run, host, agent.NewBoard()); err != nil {
			b.Fatal(err)
		}
		chain, floor, n = chain+time.Since(t1), floor+t1.Sub(t0), n+1
	}
	b.ReportMetric(float64(chain)/float64(floor), "x-floor")
	b.ReportMetric(float64(floor.Nanoseconds())/float64(n), "floor-ns")
	b.ReportMetric(float64(chain.Nanoseconds())/float64(n), "chain-ns")
}

// BenchmarkChain10 measures the engine alone: ten trivial nodes on a
// runtime that does nothing but set one var.
func BenchmarkChain10(b *testing.B) {
	benchChain(b, noopRuntime{}, "noop")
}

// noopRuntime sets one var per call and evaluates nothing.
type noopRuntime struct{}

func (noopRuntime) Name() string { return "noop" }

// noopWrites is every noopRuntime call's outcome (read-only).
var noopWrites = sandbox.Writes{{Op: sandbox.SetVar, Name: "x", Value: 1.0}}

func (noopRuntime) Invoke(context.Context, sandbox.Invocation) (sandbox.Outcome, error) {
	return sandbox.Outcome{Writes: noopWrites}, nil
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
