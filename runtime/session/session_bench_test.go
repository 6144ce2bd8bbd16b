package session_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/session"
)

// BenchmarkStartWait measures one turn of a no-op engine, Start to Wait,
// on one session without sinks.
func BenchmarkStartWait(b *testing.B) {
	e := newEnv(b, agenttest.New())
	s := e.open(key("bench")).Session()
	ctx := context.Background()
	req := ask("hi")
	b.ReportAllocs()
	for b.Loop() {
		tr, err := s.Start(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tr.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecuteDirect is the baseline of BenchmarkStartWait: the same
// no-op engine run by agent.Execute with no session around it.
func BenchmarkExecuteDirect(b *testing.B) {
	a := &agent.Agent{ID: "bot", Definition: agent.Definition{Card: agent.AgentCard{Name: "Bot"}}, Engine: agenttest.New()}
	ctx := context.Background()
	req := ask("hi")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := agent.Execute(ctx, a, agent.NoopHost{}, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSteerDrain measures one Steer and one DrainSteer on a running
// turn.
func BenchmarkSteerDrain(b *testing.B) {
	e, g := gatedEnvB(b)
	tr := e.start("bench", "hi")
	msg := userMsg("turn left at the next junction")
	b.ReportAllocs()
	for b.Loop() {
		if err := tr.Steer(msg); err != nil {
			b.Fatal(err)
		}
		if len(tr.DrainSteer()) != 1 {
			b.Fatal("nothing drained")
		}
	}
	b.StopTimer()
	g.Open()
	settle(b, tr)
}

func gatedEnvB(b *testing.B) (*env, *agenttest.Gate) {
	g := agenttest.NewGate()
	e := newEnv(b, agenttest.New(agenttest.WaitGate(g)))
	b.Cleanup(g.Open)
	return e, g
}

// BenchmarkIdleSessionMemory reports the heap held per idle session with
// 10,000 sessions open (each with a held lease and no turn).
func BenchmarkIdleSessionMemory(b *testing.B) {
	const n = 10_000
	for b.Loop() {
		e := newEnvConfig(b, agenttest.New(), session.Config{Tunables: session.Tunables{MaxSessions: n, IdleTimeout: time.Hour}})
		leases := make([]*session.Lease, 0, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			l, err := e.m.Open(context.Background(), key(fmt.Sprintf("c%05d", i)))
			if err != nil {
				b.Fatal(err)
			}
			leases = append(leases, l)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/session")
		for _, l := range leases {
			_ = l.Close()
		}
		_ = e.m.Close()
	}
}
