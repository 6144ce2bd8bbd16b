package graph_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/require"
)

// BenchmarkDurableChain10VsPairs runs a 10-node chain (a new run id each
// time) with the durable checkpoint store, and, in the same loop, ten
// write+fsync pairs of 200 bytes on one file: the floor of any store that
// flushes every wave. x-pairs is the chain's time over the floor's.
func BenchmarkDurableChain10VsPairs(b *testing.B) {
	for _, rt := range []struct {
		name   string
		rt     sandbox.Runtime
		source string
	}{{"engine", noopRuntime{}, "noop"}, {"js", newJS(b), `board.setVar("x", (board.getVar("x") || 0) + 1)`}} {
		b.Run(rt.name, func(b *testing.B) {
			e, err := graph.Build(context.Background(), chainDoc(10, rt.source),
				graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt.rt}, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(b, err)
			ws, err := workspace.NewLocal(b.TempDir())
			require.NoError(b, err)
			defer ws.Close()
			store, err := checkpoint.NewStore(ws, "")
			require.NoError(b, err)
			defer store.Close()
			var failed error
			host := &agent.HostFuncs{Inner: agent.NoopHost{}, CheckpointFn: func(ctx context.Context, cp agent.Checkpoint) error {
				err := store.Save(ctx, cp)
				if err != nil {
					failed = err
				}
				return err
			}}
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "pairs"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			require.NoError(b, err)
			defer f.Close()
			rec := make([]byte, 200)
			var chain, pairs time.Duration
			i := 0
			for b.Loop() {
				run := agent.Run{ID: fmt.Sprintf("run-%016x", i), AgentID: "bench", Attempt: 1}
				t0 := time.Now()
				if _, err := e.Execute(context.Background(), run, host, agent.NewBoard()); err != nil || failed != nil {
					b.Fatal(err, failed)
				}
				t1 := time.Now()
				for range 10 {
					if _, err := f.Write(rec); err != nil {
						b.Fatal(err)
					}
					if err := f.Sync(); err != nil {
						b.Fatal(err)
					}
				}
				chain, pairs = chain+t1.Sub(t0), pairs+time.Since(t1)
				i++
			}
			b.ReportMetric(float64(chain)/float64(pairs), "x-pairs")
			b.ReportMetric(float64(chain.Nanoseconds())/float64(i), "chain-ns")
			b.ReportMetric(float64(pairs.Nanoseconds())/float64(i), "pairs-ns")
		})
	}
}
