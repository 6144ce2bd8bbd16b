package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/require"
)

// BenchmarkReplayVsLive runs the 10-node chain live (building the
// deployment, running one turn, recording it) and replays that recording,
// alternately, one of each per iteration, and reports the replay's time
// as a multiple of the live run's (x-live): the ratio holds when other
// work shares the machine. ns/op is a live run and a replay together.
//
//	go test -run '^$' -bench ReplayVsLive -benchmem ./replay/
func BenchmarkReplayVsLive(b *testing.B) {
	doc, err := deploy.ParseFile("testdata/replay/chain10/deploy.yaml")
	require.NoError(b, err)
	ctx := context.Background()
	turn := replay.TurnConfig{Document: doc, NewBuilder: builtin.NewBuilder, Agent: "chain",
		Request: agent.Request{Message: message.NewTextMessage(message.RoleUser, "go")}}
	rec, _, err := replay.Record(ctx, turn)
	require.NoError(b, err)
	cfg := replay.Config{Document: doc, NewBuilder: builtin.NewBuilder}
	var live, replayed time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if _, _, err := replay.Record(ctx, turn); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		rep, err := replay.Replay(ctx, rec, cfg)
		if err != nil || !rep.Identical {
			b.Fatalf("replay: %v %v", err, rep.Divergence)
		}
		live += t1.Sub(t0)
		replayed += time.Since(t1)
	}
	b.ReportMetric(float64(replayed)/float64(live), "x-live")
}

// The chain's recording replays identically (the benchmark's premise).
func TestReplayChain(t *testing.T) {
	t.Parallel()
	doc, err := deploy.ParseFile("testdata/replay/chain10/deploy.yaml")
	require.NoError(t, err)
	ctx := context.Background()
	rec, res, err := replay.Record(ctx, replay.TurnConfig{Document: doc, NewBuilder: builtin.NewBuilder, Agent: "chain",
		Request: agent.Request{Message: message.NewTextMessage(message.RoleUser, "go")}})
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status)
	require.Len(t, rec.Inputs, 20, "a clock and a random reading per node")
	rep, err := replay.Replay(ctx, rec, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
	require.NoError(t, err)
	require.True(t, rep.Identical, "%v", rep.Divergence)
}
