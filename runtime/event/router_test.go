package event_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/event/eventtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chanSink forwards every envelope to a channel.
type chanSink chan event.Envelope

func (s chanSink) OnEvent(ctx context.Context, env event.Envelope) error {
	select {
	case s <- env:
		return nil
	case <-ctx.Done():
		return nil
	}
}

func (s chanSink) next(t *testing.T) event.Envelope {
	t.Helper()
	select {
	case env := <-s:
		return env
	case <-time.After(eventtest.Wait):
		require.FailNow(t, "the sink received nothing")
	}
	return event.Envelope{}
}

func (s chanSink) empty(t *testing.T) {
	t.Helper()
	select {
	case env := <-s:
		assert.Failf(t, "unexpected delivery", "%q", env.Subject)
	default:
	}
}

func newRouter(t *testing.T, buses ...event.Bus) *event.Router {
	t.Helper()
	r := event.NewRouter()
	t.Cleanup(func() { _ = r.Close() })
	for _, b := range buses {
		require.NoError(t, r.AddBus(b))
	}
	return r
}

func newBus(t *testing.T) *event.MemoryBus {
	t.Helper()
	b := event.NewMemoryBus()
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func attach(t *testing.T, r *event.Router, pattern string, sink event.Sink, opts ...event.AttachOption) func() {
	t.Helper()
	detach, err := r.Attach(t.Context(), pattern, sink, opts...)
	require.NoError(t, err)
	return detach
}

// REF 1.5.1
// REF 4.3.7
func TestRouterAttachReceivesFromEveryBus(t *testing.T) {
	t.Parallel()
	b1, b2 := newBus(t), newBus(t)
	r := newRouter(t, b1, b2)
	sink := make(chanSink, 8)
	attach(t, r, "x.>", sink)
	eventtest.Publish(t, b1, "x.one", nil)
	eventtest.Publish(t, b2, "x.two", nil)
	eventtest.Publish(t, b2, "y.no", nil)
	got := []string{sink.next(t).Subject, sink.next(t).Subject}
	assert.ElementsMatch(t, []string{"x.one", "x.two"}, got)
	sink.empty(t)
}

// REF 1.5.1
func TestRouterDeliversInOrder(t *testing.T) {
	t.Parallel()
	b := newBus(t)
	r := newRouter(t, b)
	sink := make(chanSink)
	attach(t, r, "seq", sink, event.WithAttachBackpressure(event.Block))
	go func() {
		for i := range 100 {
			env, _ := event.NewEnvelope(context.Background(), "seq", i)
			_ = b.Publish(context.Background(), env)
		}
	}()
	for i := range 100 {
		var n int
		require.NoError(t, sink.next(t).Decode(&n))
		require.Equal(t, i, n)
	}
}

// REF 1.5.5
func TestRouterAttachmentFollowsBusesAcrossAReload(t *testing.T) {
	t.Parallel()
	old, next := newBus(t), newBus(t)
	r := newRouter(t, old)
	sink := make(chanSink, 8)
	attach(t, r, "e.*", sink)

	require.NoError(t, r.AddBus(next)) // a new generation's bus
	eventtest.Publish(t, next, "e.new", nil)
	assert.Equal(t, "e.new", sink.next(t).Subject)
	eventtest.Publish(t, old, "e.old", nil)
	assert.Equal(t, "e.old", sink.next(t).Subject, "both live generations deliver")

	r.RemoveBus(old) // the old generation retires
	assert.Zero(t, old.Subscriptions(), "RemoveBus drops the router's subscriptions on that bus")
	eventtest.Publish(t, old, "e.old", nil)
	eventtest.Publish(t, next, "e.after", nil)
	assert.Equal(t, "e.after", sink.next(t).Subject)
	sink.empty(t)
	assert.Equal(t, 1, r.Buses())
	r.RemoveBus(old) // unknown now: a no-op
	r.RemoveBus(nil)
}

// REF 4.3.7
func TestRouterRemoveBusDropsOnlyThatBus(t *testing.T) {
	t.Parallel()
	b1, b2 := newBus(t), newBus(t)
	own := eventtest.Subscribe(t, b1, "k") // not the router's
	r := newRouter(t, b1, b2)
	sink := make(chanSink, 4)
	attach(t, r, "k", sink)
	require.Equal(t, 2, b1.Subscriptions())
	r.RemoveBus(b1)
	assert.Equal(t, 1, b1.Subscriptions(), "only the router's subscription is dropped")
	assert.Equal(t, 1, b2.Subscriptions())
	eventtest.Publish(t, b1, "k", nil)
	eventtest.Receive(t, own)
	sink.empty(t)
	eventtest.Publish(t, b2, "k", nil)
	assert.Equal(t, "k", sink.next(t).Subject)
}

// failingBus refuses its n-th Subscribe.
type failingBus struct {
	*event.MemoryBus
	calls, failAt atomic.Int32
}

func (b *failingBus) Subscribe(ctx context.Context, p string, cfg event.SubConfig) (event.Subscription, error) {
	if b.calls.Add(1) == b.failAt.Load() {
		return nil, fault.New(fault.Internal, "subscribe", "refused")
	}
	return b.MemoryBus.Subscribe(ctx, p, cfg)
}

// REF 4.3.7
func TestRouterAddBusIsAllOrNothing(t *testing.T) {
	t.Parallel()
	r := newRouter(t, newBus(t))
	for _, p := range []string{"a", "b", "c"} {
		attach(t, r, p, make(chanSink, 1))
	}
	bad := &failingBus{MemoryBus: newBus(t)}
	bad.failAt.Store(2)
	err := r.AddBus(bad)
	assert.ErrorIs(t, err, fault.Internal)
	assert.ErrorContains(t, err, "refused")
	assert.Zero(t, bad.Subscriptions(), "the subscriptions made before the failure are closed")
	assert.Equal(t, 1, r.Buses(), "the bus is not added")

	bad.failAt.Store(0)
	require.NoError(t, r.AddBus(bad), "a later AddBus of the same bus works")
	assert.Equal(t, 3, bad.Subscriptions())
}

// REF 4.3.7
func TestRouterAddBusErrors(t *testing.T) {
	t.Parallel()
	b := newBus(t)
	r := newRouter(t, b)
	assert.ErrorIs(t, r.AddBus(b), fault.Conflict)
	assert.ErrorIs(t, r.AddBus(nil), fault.Validation)
	assert.ErrorIs(t, r.AddBus(funcBus{}), fault.Validation, "an uncomparable bus is refused, not a panic")
	require.NoError(t, r.Close())
	err := r.AddBus(newBus(t))
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.ErrorIs(t, err, event.ErrRouterClosed)
}

// funcBus is a Bus whose dynamic type is not comparable.
type funcBus struct {
	event.Bus
	_ []int
}

// REF 1.5.6
// REF 4.3.7
func TestRouterCloseTearsDownAndWaits(t *testing.T) {
	t.Parallel()
	b := newBus(t)
	r := event.NewRouter()
	require.NoError(t, r.AddBus(b))
	var finished atomic.Bool
	inSink := make(chan struct{})
	slow := event.SinkFunc(func(ctx context.Context, env event.Envelope) error {
		close(inSink)
		<-ctx.Done() // Close cancels the attachment's ctx
		time.Sleep(10 * time.Millisecond)
		finished.Store(true)
		return nil
	})
	var detached atomic.Int32
	_, err := r.Attach(context.Background(), "c", slow, event.WithOnDetach(func(error) { detached.Add(1) }))
	require.NoError(t, err)
	other := make(chanSink, 1)
	_, err = r.Attach(context.Background(), "d", other)
	require.NoError(t, err)
	eventtest.Publish(t, b, "c", nil)
	<-inSink

	require.NoError(t, r.Close())
	assert.True(t, finished.Load(), "Close waits for the sink call in flight")
	assert.Zero(t, r.Attachments())
	assert.Zero(t, b.Subscriptions(), "every attachment's subscriptions are closed")
	require.NoError(t, r.Close(), "Close is idempotent")
	assert.Zero(t, detached.Load())

	_, err = r.Attach(context.Background(), "c", other)
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.ErrorIs(t, err, event.ErrRouterClosed)
	require.NoError(t, b.Publish(context.Background(), event.Envelope{Subject: "c"}), "the router does not close its buses")
}

// REF 1.5.6
func TestRouterConcurrentCloseAllWait(t *testing.T) {
	t.Parallel()
	b := newBus(t)
	r := newRouter(t, b)
	var finished atomic.Bool
	inSink := make(chan struct{})
	attach(t, r, "c", event.SinkFunc(func(ctx context.Context, _ event.Envelope) error {
		close(inSink)
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond)
		finished.Store(true)
		return nil
	}))
	eventtest.Publish(t, b, "c", nil)
	<-inSink
	results := make(chan bool, 4)
	for range 4 {
		go func() {
			_ = r.Close()
			results <- finished.Load()
		}()
	}
	for range 4 {
		assert.True(t, <-results, "every Close call waits")
	}
}

// REF 1.5.6
func TestRouterCloseLeaksNoGoroutines(t *testing.T) { // not parallel: counts goroutines
	check := checkGoroutines(t)
	b1, b2 := event.NewMemoryBus(), event.NewMemoryBus()
	r := event.NewRouter()
	require.NoError(t, r.AddBus(b1))
	for i := range 50 {
		_, err := r.Attach(context.Background(), "l.>", make(chanSink, 1), event.WithAttachBufferSize(i+1))
		require.NoError(t, err)
	}
	require.NoError(t, r.AddBus(b2))
	for range 10 {
		_ = b1.Publish(context.Background(), event.Envelope{Subject: "l.x"})
		_ = b2.Publish(context.Background(), event.Envelope{Subject: "l.y"})
	}
	require.NoError(t, r.Close())
	require.NoError(t, b1.Close())
	require.NoError(t, b2.Close())
	check()
}

// Envelopes a bus queued for an attachment before RemoveBus took the bus
// away are still delivered, in the bus's order: a retiring generation's last events
// reach the sinks attached to the runtime.
func TestRouterRemoveBusDeliversWhatWasQueued(t *testing.T) {
	t.Parallel()
	b1, b2 := newBus(t), newBus(t)
	r := newRouter(t, b1, b2)
	sink := newGateSink()
	attach(t, r, ">", sink)
	for _, s := range []string{"a", "b", "c"} {
		eventtest.Publish(t, b1, s, nil)
	}
	first := <-sink.started // the sink holds "a"; "b" and "c" wait in b1's queue
	r.RemoveBus(b1)
	eventtest.Publish(t, b2, "d", nil)
	close(sink.release)
	got := []string{first.Subject}
	for range 3 {
		select {
		case env := <-sink.started:
			got = append(got, env.Subject)
		case <-time.After(eventtest.Wait):
			require.FailNow(t, "missing deliveries", "got %v", got)
		}
	}
	// Order holds per bus; "d" came from the other bus.
	assert.Equal(t, []string{"a", "b", "c"}, slices.DeleteFunc(slices.Clone(got), func(s string) bool { return s == "d" }))
	assert.Contains(t, got, "d")
}
