package proc_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/proc"
	"github.com/stretchr/testify/require"
)

// chainDoc is a graph of n script nodes in a row, each running source
// (as engine/graph's chain benchmarks).
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

// BenchmarkProcessVsInProcess runs a node call and a 10-node chain on the
// in-process js runtime and on the same runtime in isolation: process,
// one of each per iteration, so that the ratio (x-in-process) holds
// when other work shares the machine: ns/op is both runs together,
// in-process-ns and process-ns each alone.
func BenchmarkProcessVsInProcess(b *testing.B) {
	inproc, err := js.New(js.Options{})
	require.NoError(b, err)
	b.Cleanup(func() { _ = inproc.Close() })
	process := newProcessJS(b, "")
	const src = `board.setVar("x", 1)`
	b.Run("node", func(b *testing.B) {
		call := func(rt sandbox.Runtime) func() error {
			return func() error {
				_, _, err := invoke(context.Background(), rt, "acme", "n", src)
				return err
			}
		}
		alternate(b, call(inproc), call(process))
	})
	b.Run("noop", func(b *testing.B) {
		floor, err := proc.New(proc.Options{Worker: noopWorker})
		require.NoError(b, err)
		b.Cleanup(func() { _ = floor.Close() })
		call := func(rt sandbox.Runtime) func() error {
			return func() error {
				_, _, err := invoke(context.Background(), rt, "acme", "n", src)
				return err
			}
		}
		alternate(b, call(inproc), call(floor))
	})
	b.Run("chain10", func(b *testing.B) {
		chain := func(rt sandbox.Runtime) func() error {
			e, err := graph.Build(context.Background(), chainDoc(10, src),
				graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt}, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(b, err)
			run := agent.Run{ID: "run-bench", AgentID: "bench", Attempt: 1}
			return func() error {
				_, err := e.Execute(context.Background(), run, agent.NoopHost{}, agent.NewBoard())
				return err
			}
		}
		alternate(b, chain(inproc), chain(process))
	})
}

// alternate runs in and out once per iteration and reports each one's
// time and their ratio.
func alternate(b *testing.B, in, out func() error) {
	b.ReportAllocs()
	require.NoError(b, in())
	require.NoError(b, out()) // workers started
	var tin, tout time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := in(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := out(); err != nil {
			b.Fatal(err)
		}
		tin += t1.Sub(t0)
		tout += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tin.Nanoseconds())/n, "in-process-ns")
	b.ReportMetric(float64(tout.Nanoseconds())/n, "process-ns")
	b.ReportMetric(float64(tout)/float64(tin), "x-in-process")
}

// BenchmarkProcessChain10 runs the 10-node chain in a worker alone, with
// nothing in process beside it: a run to wrap in perf stat or strace -c
// (docs/sandbox.md, Cost), where the alternating benchmark would count
// the in-process chain too.
func BenchmarkProcessChain10(b *testing.B) {
	e, run := startedChain(b, newProcessJS(b, ""))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Execute(context.Background(), run, agent.NoopHost{}, agent.NewBoard()); err != nil {
			b.Fatal(err)
		}
	}
}

// startedChain builds the 10-node chain of trivial script nodes on rt and
// runs it once, so that its workers have started.
func startedChain(tb testing.TB, rt sandbox.Runtime) (*graph.Engine, agent.Run) {
	tb.Helper()
	e, err := graph.Build(context.Background(), chainDoc(10, `board.setVar("x", 1)`),
		graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(tb, err)
	run := agent.Run{ID: "run-chain", AgentID: "chain", Attempt: 1}
	_, err = e.Execute(context.Background(), run, agent.NoopHost{}, agent.NewBoard())
	require.NoError(tb, err)
	return e, run
}
