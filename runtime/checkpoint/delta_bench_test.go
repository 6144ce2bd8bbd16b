package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
)

// oneVarBoard is a board of n vars of 1,000 bytes: 1 is about 1 KiB,
// 1,024 about 1 MiB.
func oneVarBoard(n int) *agent.Board {
	b := agent.NewBoard()
	for i := range n {
		b.Vars[fmt.Sprintf("v%04d", i)] = strings.Repeat(string(rune('a'+i%26)), 1000)
	}
	return b
}

// oneVarSaver saves, per call, a change of one 1,000-byte var of its board
// with BoardChanges, as a graph run's wave does.
type oneVarSaver struct {
	s     agent.CheckpointStore
	cp    agent.Checkpoint
	vals  [2]string
	seq   uint64
	names map[string]struct{}
}

func newOneVarSaver(s agent.CheckpointStore, id string, vars int) *oneVarSaver {
	return &oneVarSaver{s: s, cp: agent.Checkpoint{ExecID: id, Steps: []string{"n"}, Board: oneVarBoard(vars)},
		vals: [2]string{strings.Repeat("x", 1000), strings.Repeat("y", 1000)}, names: map[string]struct{}{"v0000": {}}}
}

func (o *oneVarSaver) save(ctx context.Context) error {
	o.seq++
	o.cp.Board.Vars["v0000"] = o.vals[o.seq%2]
	o.cp.Iteration = int(o.seq)
	o.cp.Changes = &agent.BoardChanges{Writer: 1, Seq: o.seq, Base: o.seq - 1, Vars: o.names}
	return o.s.Save(ctx, o.cp)
}

// BenchmarkOneVarChange saves a change of one var on a 1 KiB board and the
// same change on a 1 MiB board (1,024 vars of 1,000 bytes) in turn, on the
// memory store and on the log store (sync: wave), and reports the 1 MiB
// save's time as a multiple of the 1 KiB save's (x-1KiB), both measured in
// the same run.
func BenchmarkOneVarChange(b *testing.B) {
	stores := []struct {
		name string
		new  func(b *testing.B) agent.CheckpointStore
	}{
		{"memory", func(*testing.B) agent.CheckpointStore { return NewMemory() }},
		{"log", func(b *testing.B) agent.CheckpointStore { s, _ := newCountingStore(b, Config{}); return s }},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.new(b)
			ctx := context.Background()
			small, large := newOneVarSaver(s, "run-small", 1), newOneVarSaver(s, "run-large", 1024)
			var ts, tl time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := small.save(ctx); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := large.save(ctx); err != nil {
					b.Fatal(err)
				}
				ts, tl = ts+t1.Sub(t0), tl+time.Since(t1)
			}
			b.ReportMetric(float64(tl)/float64(ts), "x-1KiB")
			b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N), "1KiB-ns")
			b.ReportMetric(float64(tl.Nanoseconds())/float64(b.N), "1MiB-ns")
		})
	}
}

// BenchmarkChain10VsPairs saves a 10-wave chain on the log store (a new
// exec id per chain, sync: wave) and, in the same loop, makes ten write
// and fsync pairs of 200 bytes on a file, the floor of any durable store
// that flushes every wave; x-pairs is the chain's time over the floor's.
func BenchmarkChain10VsPairs(b *testing.B) {
	s, _ := newCountingStore(b, Config{})
	ctx := context.Background()
	require := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	require(s.Save(ctx, agent.Checkpoint{ExecID: "run-warm", Board: agent.NewBoard()}))
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "pairs"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	require(err)
	defer f.Close()
	rec := make([]byte, 200)
	var chain, pairs time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		require(chainRun(ctx, s, fmt.Sprintf("run-%d", i), 10, agent.NewBoard()))
		t1 := time.Now()
		for range 10 {
			_, err := f.Write(rec)
			require(err)
			require(f.Sync())
		}
		chain, pairs = chain+t1.Sub(t0), pairs+time.Since(t1)
		i++
	}
	b.ReportMetric(float64(chain)/float64(pairs), "x-pairs")
	b.ReportMetric(float64(chain.Nanoseconds())/float64(b.N), "chain-ns")
	b.ReportMetric(float64(pairs.Nanoseconds())/float64(b.N), "pairs-ns")
}

// BenchmarkConcurrentSessions saves 10-wave chains from 1 and from 8
// sessions at once (each its own log, sync: wave) and reports the time
// per save: when concurrent flushes of a disk share its journal commits,
// 8 sessions save faster per save than one, and a group commit of our
// own would have nothing left to gather.
func BenchmarkConcurrentSessions(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			s, _ := newCountingStore(b, Config{})
			ctx := context.Background()
			round := 0
			var total time.Duration
			for b.Loop() {
				t0 := time.Now()
				errs := make(chan error, n)
				for k := range n {
					go func() {
						errs <- chainRun(ctx, s, fmt.Sprintf("run-%d-%d", round, k), 10, agent.NewBoard())
					}()
				}
				for range n {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
				total += time.Since(t0)
				round++
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*n*10), "ns/save")
		})
	}
}
