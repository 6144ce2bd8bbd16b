package nats_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/nats/natstest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
)

// benchPublishDeliver publishes one envelope on pub and receives it on a
// subscription of sub, b.N times.
func benchPublishDeliver(b *testing.B, pub, sub event.Bus, subject string) {
	s, err := sub.Subscribe(b.Context(), "bench.>", event.SubConfig{BufferSize: 1024})
	if err != nil {
		b.Fatal(err)
	}
	env, err := event.NewEnvelope(context.Background(), subject, map[string]int{"n": 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		env.ID = event.NewID() // the stream keeps one copy of an id
		if err := pub.Publish(ctx, env); err != nil {
			b.Fatal(err)
		}
		select {
		case <-s.C():
		case <-time.After(wait):
			b.Fatal("not delivered")
		}
	}
}

// BenchmarkPublishDeliver publishes one envelope and receives it on one
// subscription: on a memory bus (the baseline), and on nats buses of one
// server, on the publishing node and on another node, for a durable event
// (stored in the stream, Publish waits for its acknowledgement) and an
// ephemeral one (core NATS).
func BenchmarkPublishDeliver(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		bus := event.NewMemoryBus()
		defer bus.Close()
		benchPublishDeliver(b, bus, bus, "bench.e")
	})
	srv := natstest.Run(b)
	eph := func(c *nats.Config) { c.Ephemeral, c.Memory = []string{"bench.eph.>"}, false }
	a, o := connect(b, srv.URL(), "a", eph), connect(b, srv.URL(), "o", eph)
	for _, bc := range []struct {
		name    string
		sub     event.Bus
		subject string
	}{
		{"nats_local_ephemeral", a, "bench.eph.e"},
		{"nats_local_durable", a, "bench.e"},
		{"nats_remote_ephemeral", o, "bench.eph.e"},
		{"nats_remote_durable", o, "bench.e"},
	} {
		b.Run(bc.name, func(b *testing.B) { benchPublishDeliver(b, a, bc.sub, bc.subject) })
	}
}

// BenchmarkLeaseTakeover measures how long another node waits to take a
// session key over after its holder dies (stops renewing without
// releasing) at a random point of its renewal period, on a three-server
// cluster with lease_ttl 1s; it prints the distribution. Run it with
// -benchtime=20x.
func BenchmarkLeaseTakeover(b *testing.B) {
	servers := natstest.Cluster(b, 3)
	urls := natstest.URLs(servers)
	opts := func(c *nats.Config) { c.Replicas, c.LeaseTTL = 3, time.Second }
	holder, taker := connect(b, urls, "holder", opts), connect(b, urls, "taker", opts)
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		key := session.Key{AgentID: "bench", ContextID: fmt.Sprint(i)}
		c, err := holder.Ownership().Acquire(b.Context(), key)
		if err != nil {
			b.Fatal(err)
		}
		// the holder dies at a random point of its renewal period
		time.Sleep(rand.N(500 * time.Millisecond))
		nats.Abandon(c.(*nats.Claim))
		died := time.Now()
		for {
			tc, err := taker.Ownership().Acquire(b.Context(), key)
			if err == nil {
				took = append(took, time.Since(died))
				_ = tc.Release(b.Context())
				break
			}
			if time.Since(died) > wait {
				b.Fatalf("no takeover within %s: %v", wait, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	q := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	b.ReportMetric(float64(q(0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(q(0.9).Milliseconds()), "p90-ms")
	b.ReportMetric(float64(took[len(took)-1].Milliseconds()), "max-ms")
	b.Logf("takeover after the holder's death, lease ttl 1s, %d samples: min %s p50 %s p90 %s max %s",
		len(took), took[0].Round(time.Millisecond), q(0.5).Round(time.Millisecond), q(0.9).Round(time.Millisecond),
		took[len(took)-1].Round(time.Millisecond))
}

// BenchmarkSessionTakeover measures the time from a lease holder's death
// (its connection closes, at a random point of its renewal period) to
// another node's successful claim of the same session key, on one server
// with lease_ttl 1s; it prints min, p50, p90 and max. Each sample is one
// holder: run it with -benchtime=20x.
func BenchmarkSessionTakeover(b *testing.B) {
	srv := natstest.Run(b)
	ttl := func(c *nats.Config) { c.LeaseTTL = time.Second }
	taker := connect(b, srv.URL(), "taker", ttl)
	key := session.Key{AgentID: "bench", ContextID: "takeover"}
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		holder := connect(b, srv.URL(), fmt.Sprint("holder-", i), ttl)
		if _, err := holder.Ownership().Acquire(b.Context(), key); err != nil {
			b.Fatal(err)
		}
		time.Sleep(rand.N(333 * time.Millisecond))
		b.StartTimer()
		holder.Conn().Close() // the holder dies without releasing
		died := time.Now()
		for {
			tc, err := taker.Ownership().Acquire(b.Context(), key)
			if err == nil {
				took = append(took, time.Since(died))
				b.StopTimer()
				_ = tc.Release(b.Context())
				b.StartTimer()
				break
			}
			if time.Since(died) > wait {
				b.Fatalf("no takeover within %s: %v", wait, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	q := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	for _, m := range []struct {
		unit string
		d    time.Duration
	}{{"min-ms", took[0]}, {"p50-ms", q(0.5)}, {"p90-ms", q(0.9)}, {"max-ms", took[len(took)-1]}} {
		b.ReportMetric(float64(m.d.Microseconds())/1000, m.unit)
	}
	b.Logf("takeover after the holder's connection closed, one server, lease ttl 1s, %d samples: min %s p50 %s p90 %s max %s",
		len(took), took[0].Round(time.Millisecond), q(0.5).Round(time.Millisecond), q(0.9).Round(time.Millisecond),
		took[len(took)-1].Round(time.Millisecond))
}
