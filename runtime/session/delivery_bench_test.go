package session

import (
	"context"
	"fmt"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// BenchmarkStreamDelta measures one text delta from Publish to OnDelta on
// every sink, raw and confirmed.
func BenchmarkStreamDelta(b *testing.B) {
	for _, vis := range []Visibility{VisibilityRaw, VisibilityConfirmed} {
		for _, n := range []int{1, 8} {
			name := fmt.Sprintf("sinks=%d/%s", n, map[Visibility]string{VisibilityRaw: "raw", VisibilityConfirmed: "confirmed"}[vis])
			b.Run(name, func(b *testing.B) { benchDelta(b, n, vis) })
		}
	}
}

func benchDelta(b *testing.B, n int, vis Visibility) {
	bus := event.NewMemoryBus()
	defer func() { _ = bus.Close() }()
	got := make(chan struct{}, n)
	sink := agent.StreamSinkFunc(func(context.Context, event.Envelope, event.StreamDeltaPayload) error {
		got <- struct{}{}
		return nil
	})
	specs := make([]SinkSpec, n)
	for i := range specs {
		specs[i] = SinkSpec{ID: fmt.Sprint(i), Sink: sink, Visibility: vis}
	}
	s, err := startStream(context.Background(), bus, streamConfig{runID: testRun}, specs)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	env, err := event.NewEnvelope(context.Background(), event.SubjectStreamDelta(testRun, "bot_node_n1"), textDelta("hello"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := bus.Publish(ctx, env); err != nil {
			b.Fatal(err)
		}
		for range n {
			<-got
		}
	}
}
