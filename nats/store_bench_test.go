package nats_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/nats/natstest"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/workspace"
)

// durableChain saves the checkpoints of a 10-node run as a graph run's
// waves do (each a change of one var, with BoardChanges: a snapshot, then
// deltas) and then the session's record, which a turn writes at its end.
func durableChain(ctx context.Context, s agent.CheckpointStore, execID string) error {
	board := agent.NewBoard()
	for i := range 10 {
		board.Vars[fmt.Sprintf("n%d", i)] = float64(i)
		cp := agent.Checkpoint{ExecID: execID, Steps: []string{fmt.Sprintf("n%d", i)}, Iteration: i + 1, Board: board,
			Changes: &agent.BoardChanges{Writer: 42, Seq: uint64(i + 1), Base: uint64(i),
				Vars: map[string]struct{}{fmt.Sprintf("n%d", i): {}}}}
		if err := s.Save(ctx, cp); err != nil {
			return err
		}
	}
	return s.Save(ctx, agent.Checkpoint{ExecID: "session-" + execID, Board: board})
}

// BenchmarkDurableChain runs, in the same loop, the 10-node durable chain
// on the jetstream store and on the local log store (sync: wave, every
// wave flushed to the disk), and reports the jetstream chain's time over
// the local one's (x-local). The servers keep their streams in files;
// "one server" is one embedded server with replicas 1, "cluster" three
// on loopback with replicas 3.
func BenchmarkDurableChain(b *testing.B) {
	for _, tc := range []struct {
		name     string
		servers  int
		replicas int
	}{{"one server", 1, 1}, {"cluster", 3, 3}} {
		b.Run(tc.name, func(b *testing.B) {
			var url string
			if tc.servers == 1 {
				url = natstest.Run(b).URL()
			} else {
				url = natstest.URLs(natstest.Cluster(b, tc.servers))
			}
			js := connect(b, url, "bench", func(c *nats.Config) { c.Replicas = tc.replicas }).Checkpoints(checkpoint.Policy{})
			ws, err := workspace.NewLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			local, err := checkpoint.NewStore(ws, "")
			if err != nil {
				b.Fatal(err)
			}
			defer local.Close()
			ctx := context.Background()
			var onJS, onLocal time.Duration
			i := 0
			for b.Loop() {
				t0 := time.Now()
				if err := durableChain(ctx, js, fmt.Sprintf("run-%d", i)); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := durableChain(ctx, local, fmt.Sprintf("run-%d", i)); err != nil {
					b.Fatal(err)
				}
				onJS, onLocal = onJS+t1.Sub(t0), onLocal+time.Since(t1)
				i++
			}
			b.ReportMetric(float64(onJS)/float64(onLocal), "x-local")
			b.ReportMetric(float64(onJS.Nanoseconds())/float64(b.N), "jetstream-ns")
			b.ReportMetric(float64(onLocal.Nanoseconds())/float64(b.N), "local-ns")
		})
	}
}
