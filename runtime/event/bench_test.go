package event_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/corral-rt/corral/runtime/event"
)

// Run with: go test -run=^$ -bench=. -benchmem ./runtime/event/

func benchPublishDeliver(b *testing.B, subscribers int) {
	bus := event.NewMemoryBus()
	defer bus.Close()
	ctx := context.Background()
	subs := make([]event.Subscription, subscribers)
	for i := range subs {
		sub, err := bus.Subscribe(ctx, "agent.run.*.stream.>", event.SubConfig{})
		if err != nil {
			b.Fatal(err)
		}
		subs[i] = sub
	}
	env, err := event.NewEnvelope(ctx, event.SubjectStreamDelta("r1", event.Actor("bot", "n1")), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := bus.Publish(ctx, env); err != nil {
			b.Fatal(err)
		}
		for _, s := range subs {
			<-s.C()
		}
	}
}

// BenchmarkPublishDeliver1 publishes one envelope and receives it on one
// subscription.
func BenchmarkPublishDeliver1(b *testing.B) { benchPublishDeliver(b, 1) }

// BenchmarkPublishDeliver100 publishes one envelope and receives it on each
// of 100 subscriptions.
func BenchmarkPublishDeliver100(b *testing.B) { benchPublishDeliver(b, 100) }

// BenchmarkRouteMatch publishes to a bus with 1000 subscriptions of which
// one matches, with the route cache on (the default) and off.
func BenchmarkRouteMatch(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{{"cache_on", event.DefaultRouteCacheSize}, {"cache_off", -1}} {
		b.Run(c.name, func(b *testing.B) {
			bus := event.NewMemoryBusWithConfig(event.BusConfig{RouteCacheSize: c.size})
			defer bus.Close()
			ctx := context.Background()
			var hit event.Subscription
			for i := range 1000 {
				sub, err := bus.Subscribe(ctx, fmt.Sprintf("agent.run.r%d.step.*.>", i), event.SubConfig{})
				if err != nil {
					b.Fatal(err)
				}
				if i == 500 {
					hit = sub
				}
			}
			env := event.Envelope{ID: event.NewID(), Subject: event.SubjectStepStart("r500", "bot_node_n1")}
			b.ReportAllocs()
			for b.Loop() {
				if err := bus.Publish(ctx, env); err != nil {
					b.Fatal(err)
				}
				<-hit.C()
			}
		})
	}
}

// BenchmarkMatch matches a compiled pattern against a subject.
func BenchmarkMatch(b *testing.B) {
	p := event.MustCompilePattern("agent.run.*.step.>")
	subject := event.SubjectStepStart("r1", event.Actor("bot", "n1"))
	b.ReportAllocs()
	for b.Loop() {
		if !p.Match(subject) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkNewEnvelope makes an envelope with a small JSON payload.
func BenchmarkNewEnvelope(b *testing.B) {
	ctx := context.Background()
	payload := event.StepPayload{NodeID: "n1", Graph: "g"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := event.NewEnvelope(ctx, "agent.run.r1.start", payload); err != nil {
			b.Fatal(err)
		}
	}
}
