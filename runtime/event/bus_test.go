package event_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/event/eventtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 4.3.2
func TestMemoryBusDefaultBufferIs64(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		bus  *event.MemoryBus
		cfg  event.SubConfig
		want int
	}{
		{"default", event.NewMemoryBus(), event.SubConfig{}, event.DefaultBufferSize},
		{"zero keeps the default", event.NewMemoryBus(), event.SubConfig{BufferSize: 0}, 64},
		{"bus default", event.NewMemoryBusWithConfig(event.BusConfig{DefaultBufferSize: 3}), event.SubConfig{}, 3},
		{"subscription wins", event.NewMemoryBusWithConfig(event.BusConfig{DefaultBufferSize: 3}), event.SubConfig{BufferSize: 5}, 5},
		{"bad bus default ignored", event.NewMemoryBusWithConfig(event.BusConfig{DefaultBufferSize: -1}), event.SubConfig{}, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			defer c.bus.Close()
			sub := eventtest.SubscribeWithConfig(t, c.bus, "a", c.cfg)
			for i := range c.want + 1 {
				eventtest.Publish(t, c.bus, "a", i)
			}
			assert.Equal(t, c.want, cap(sub.C()))
			assert.Len(t, sub.C(), c.want)
			assert.Equal(t, uint64(1), c.bus.Dropped())
		})
	}
}

// REF 4.3.2
func TestResolveSubConfig(t *testing.T) {
	t.Parallel()
	keep := func(event.Envelope) bool { return true }
	c, err := event.ResolveSubConfig(0, event.SubConfig{Predicate: keep, SampleRate: 0.25})
	require.NoError(t, err)
	assert.Equal(t, 64, c.BufferSize)
	assert.Equal(t, event.DropNewest, c.Backpressure)
	assert.Equal(t, 0.25, c.SampleRate)
	assert.NotNil(t, c.Predicate)

	c, err = event.ResolveSubConfig(8, event.SubConfig{})
	require.NoError(t, err)
	assert.Equal(t, 1.0, c.SampleRate, "the default rate (a zero rate) keeps everything")
	assert.Equal(t, 8, c.BufferSize)

	for _, r := range []struct{ in, want float64 }{{-1, 0}, {math.NaN(), 0}, {2, 1}, {0.5, 0.5}, {0, 1}} {
		c, err = event.ResolveSubConfig(0, event.SubConfig{SampleRate: r.in})
		require.NoError(t, err)
		assert.Equal(t, r.want, c.SampleRate, "rate %v is clamped", r.in)
	}
	_, err = event.ResolveSubConfig(0, event.SubConfig{Backpressure: event.Backpressure(9)})
	assert.ErrorIs(t, err, fault.Validation)
	_, err = event.ResolveSubConfig(0, event.SubConfig{BufferSize: event.MaxBufferSize + 1})
	assert.ErrorIs(t, err, fault.Validation)
	c, err = event.ResolveSubConfig(0, event.SubConfig{BufferSize: event.MaxBufferSize})
	require.NoError(t, err, "the maximum is allowed")
	assert.Equal(t, event.MaxBufferSize, c.BufferSize)

	assert.Equal(t, "drop_newest drop_oldest block sample backpressure(7)", fmt.Sprint(
		event.DropNewest, event.DropOldest, event.Block, event.Sample, event.Backpressure(7)))
}

// REF 4.3.1
func TestMemoryBusArguments(t *testing.T) {
	t.Parallel()
	bus := event.NewMemoryBus()
	defer bus.Close()
	//nolint:staticcheck // a nil ctx is the input under test
	_, err := bus.Subscribe(nil, "a", event.SubConfig{})
	assert.ErrorIs(t, err, fault.Validation)
	//nolint:staticcheck // a nil ctx is the input under test
	assert.ErrorIs(t, bus.Publish(nil, event.Envelope{Subject: "a"}), fault.Validation)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = bus.Subscribe(ctx, "a", event.SubConfig{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, fault.Aborted)
	assert.Zero(t, bus.Subscriptions())

	assert.NotPanics(t, func() { bus.AttachObserver(nil)() })
}

// REF 4.3.1
func TestMemoryBusClosedErrorIsExactlyTheSentinel(t *testing.T) {
	t.Parallel()
	bus := event.NewMemoryBus()
	require.NoError(t, bus.Close())
	err := bus.Publish(context.Background(), event.Envelope{Subject: "a..invalid"})
	assert.Same(t, event.ErrBusClosed, err, "Publish after Close returns the sentinel itself, before any validation")
	_, err = bus.Subscribe(context.Background(), "a*", event.SubConfig{})
	assert.Same(t, event.ErrBusClosed, err)
	assert.Equal(t, "event bus: bus is closed", err.Error())
}

// REF 4.3.1
func TestMemoryBusCtxCancelUnregisters(t *testing.T) {
	t.Parallel()
	bus := event.NewMemoryBus()
	defer bus.Close()
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := bus.Subscribe(ctx, "a", event.SubConfig{})
	require.NoError(t, err)
	require.Equal(t, 1, bus.Subscriptions())
	cancel()
	eventtest.AssertClosed(t, sub)
	assert.Eventually(t, func() bool { return bus.Subscriptions() == 0 }, eventtest.Wait, pollEvery)
	require.NoError(t, sub.Close(), "closing after the ctx ended is fine")
}

// REF 4.3.3
func TestMemoryBusBlockCtxErrorKindAndOtherSubscribers(t *testing.T) {
	t.Parallel()
	bus := event.NewMemoryBus()
	defer bus.Close()
	blocked := eventtest.SubscribeWithConfig(t, bus, "q", event.SubConfig{BufferSize: 1, Backpressure: event.Block})
	other := eventtest.SubscribeWithConfig(t, bus, "q", event.SubConfig{BufferSize: 4})
	eventtest.Publish(t, bus, "q", "first")

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the publisher's ctx has already ended: the full Block buffer fails at once
	err := bus.Publish(ctx, event.Envelope{Subject: "q"})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, fault.Aborted)
	assert.Len(t, other.C(), 2, "the other subscriptions still got the envelope")
	assert.Len(t, blocked.C(), 1)
}

// REF 4.3.3
func TestMemoryBusDropReasonsAndCount(t *testing.T) {
	t.Parallel()
	bus := event.NewMemoryBus()
	defer bus.Close()
	rec := eventtest.NewRecorder()
	defer bus.AttachObserver(rec)()
	eventtest.SubscribeWithConfig(t, bus, "d", event.SubConfig{BufferSize: 1})
	eventtest.SubscribeWithConfig(t, bus, "d", event.SubConfig{Backpressure: event.Sample, SampleRate: -1})
	eventtest.Publish(t, bus, "d", "a")
	eventtest.Publish(t, bus, "d", "b")
	assert.Equal(t, []string{"d|a|sampled", "d|b|buffer_full", "d|b|sampled"}, sortedCopy(rec.Drops()))
	assert.Equal(t, uint64(3), bus.Dropped())
	assert.Equal(t, []event.DropReason{"buffer_full", "closed", "sampled"},
		[]event.DropReason{event.DropBufferFull, event.DropClosed, event.DropSampled})
}

// REF 4.3.5
func TestMemoryBusRouteCacheInvalidation(t *testing.T) {
	for _, size := range []int{-1, 1, 1024} {
		t.Run(fmt.Sprint("cache ", size), func(t *testing.T) {
			t.Parallel()
			bus := event.NewMemoryBusWithConfig(event.BusConfig{RouteCacheSize: size})
			defer bus.Close()
			rec := eventtest.NewRecorder()
			defer bus.AttachObserver(rec)()

			first := eventtest.Subscribe(t, bus, "a.*")
			eventtest.Publish(t, bus, "a.b", nil) // caches a.b → [first]
			eventtest.Publish(t, bus, "a.c", nil)

			second := eventtest.Subscribe(t, bus, "a.>")
			eventtest.Publish(t, bus, "a.b", nil)
			eventtest.Receive(t, second) // a cached route would miss the new subscription

			require.NoError(t, first.Close())
			eventtest.Publish(t, bus, "a.b", nil)
			eventtest.Receive(t, second)
			assert.Empty(t, rec.Drops(), "a cached route would still offer to the closed subscription")
			assert.ElementsMatch(t, []string{"a.*|a.b", "a.*|a.c", "a.*|a.b", "a.>|a.b", "a.>|a.b"}, rec.Deliveries())
		})
	}
}

// REF 4.3.6
func TestMemoryBusHasNoAckSubscription(t *testing.T) {
	t.Parallel()
	bus := event.NewMemoryBus()
	defer bus.Close()
	sub := eventtest.Subscribe(t, bus, "a")
	_, ok := sub.(event.AckSubscription)
	assert.False(t, ok)
}
