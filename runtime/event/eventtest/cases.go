package eventtest

import (
	"context"
	"encoding/json"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Cases returns the conformance cases in a stable order.
func Cases() []Case {
	return []Case{
		{"publish_subscribe", "A subscriber receives the envelope published on its subject with subject, headers and payload intact.", casePublishSubscribe},
		{"no_match", "A subscriber receives nothing whose subject its pattern does not match.", caseNoMatch},
		{"wildcard_one", "A '*' segment matches exactly one segment, whatever it is.", caseWildcardOne},
		{"wildcard_tail", "A trailing '>' matches one or more segments and never zero.", caseWildcardTail},
		{"case_sensitive", "Matching is case-sensitive.", caseCaseSensitive},
		{"fan_out", "Every matching subscription receives its own copy of an envelope.", caseFanOut},
		{"order", "Envelopes from one publisher reach a subscriber in publish order.", caseOrder},
		{"fill_id_time", "Publish fills a missing ID and Time and keeps the ones already set.", caseFillIDTime},
		{"invalid_subject", "Publish refuses an invalid subject with ErrInvalidSubject, a Validation error.", caseInvalidSubject},
		{"invalid_pattern", "Subscribe refuses an invalid pattern with ErrInvalidPattern, a Validation error.", caseInvalidPattern},
		{"buffer_size_limits", "Subscribe refuses a buffer above 1<<20 or below zero with a Validation error.", caseBufferLimits},
		{"closed_bus", "After Close, Publish and Subscribe return ErrBusClosed, a NotAvailable error.", caseClosedBus},
		{"close_idempotent", "Close can be called twice without error and closes every subscription channel.", caseCloseIdempotent},
		{"ctx_cancel", "Cancelling a subscription's ctx closes its channel and leaves the others open.", caseCtxCancel},
		{"subscription_close", "Subscription.Close closes its channel, is idempotent, and the bus keeps working.", caseSubscriptionClose},
		{"pattern", "Subscription.Pattern returns the pattern the subscription was opened with.", casePattern},
		{"drop_newest", "DropNewest (the default) discards the incoming envelope when the buffer is full and reports buffer_full.", caseDropNewest},
		{"drop_oldest", "DropOldest evicts the oldest buffered envelope to make room and reports it as buffer_full.", caseDropOldest},
		{"block_waits", "Block makes the publisher wait for room, then delivers.", caseBlockWaits},
		{"block_ctx", "A publisher waiting on a Block subscription returns its ctx error when its ctx ends.", caseBlockCtx},
		{"block_subscription_close", "A publisher waiting on a Block subscription returns when the subscription closes, reporting closed.", caseBlockSubClose},
		{"block_bus_close", "A publisher waiting on a Block subscription returns when the bus closes.", caseBlockBusClose},
		{"sample", "Sample keeps everything at rate 1 and drops everything at rate 0, reporting sampled; rates are clamped to [0,1].", caseSample},
		{"predicate", "A predicate filters envelopes after pattern matching.", casePredicate},
		{"observers", "Observers see each publish, each delivery with its pattern, and stop seeing them once detached.", caseObservers},
		{"observer_outside_locks", "Observer callbacks run outside the bus's locks: a callback can wait for a Subscribe on another goroutine.", caseObserverOutsideLocks},
	}
}

func casePublishSubscribe(t *testing.T, bus event.Bus) {
	sub := Subscribe(t, bus, "orders.created")
	env, err := event.NewEnvelope(t.Context(), "orders.created", map[string]int{"n": 1})
	require.NoError(t, err)
	env = env.WithHeader(event.HeaderRunID, "r1")
	env.Source = "test"
	require.NoError(t, bus.Publish(t.Context(), env))
	got := Receive(t, sub)
	assert.Equal(t, env.ID, got.ID)
	assert.Equal(t, "orders.created", got.Subject)
	assert.Equal(t, "test", got.Source)
	assert.Equal(t, "r1", got.Header(event.HeaderRunID))
	assert.JSONEq(t, `{"n":1}`, string(got.Payload))
}

func caseNoMatch(t *testing.T, bus event.Bus) {
	sub := Subscribe(t, bus, "a.b")
	for _, s := range []string{"a", "a.c", "a.b.c", "b.a", "x.a.b"} {
		Publish(t, bus, s, nil)
	}
	AssertEmpty(t, sub)
}

// expectMatches publishes every subject and checks which ones pattern
// received, in order.
func expectMatches(t *testing.T, bus event.Bus, pattern string, subjects, want []string) {
	t.Helper()
	sub := SubscribeWithConfig(t, bus, pattern, event.SubConfig{BufferSize: len(subjects) + 1})
	for _, s := range subjects {
		Publish(t, bus, s, nil)
	}
	var got []string
	for range want {
		got = append(got, Receive(t, sub).Subject)
	}
	assert.Equal(t, want, got, "pattern %q", pattern)
	AssertEmpty(t, sub)
}

func caseWildcardOne(t *testing.T, bus event.Bus) {
	expectMatches(t, bus, "a.*.c",
		[]string{"a.b.c", "a.c", "a.b.x.c", "a.x.c", "a.b.c.d", "b.b.c"},
		[]string{"a.b.c", "a.x.c"})
}

func caseWildcardTail(t *testing.T, bus event.Bus) {
	expectMatches(t, bus, "agent.run.>",
		[]string{"agent.run", "agent.run.r1", "agent.run.r1.start", "agent.runs.r1", "agent"},
		[]string{"agent.run.r1", "agent.run.r1.start"})
}

func caseCaseSensitive(t *testing.T, bus event.Bus) {
	expectMatches(t, bus, "Run.*",
		[]string{"run.a", "RUN.a", "Run.a"},
		[]string{"Run.a"})
}

func caseFanOut(t *testing.T, bus event.Bus) {
	subs := []event.Subscription{
		Subscribe(t, bus, "x.y"), Subscribe(t, bus, "x.*"), Subscribe(t, bus, "x.>"), Subscribe(t, bus, "x.y"),
	}
	Publish(t, bus, "x.y", "hi")
	for _, s := range subs {
		assert.Equal(t, "x.y", Receive(t, s).Subject, s.Pattern())
		AssertEmpty(t, s)
	}
}

func caseOrder(t *testing.T, bus event.Bus) {
	const n = 50
	sub := SubscribeWithConfig(t, bus, "seq", event.SubConfig{BufferSize: n})
	for i := range n {
		Publish(t, bus, "seq", i)
	}
	for i := range n {
		var got int
		require.NoError(t, Receive(t, sub).Decode(&got))
		assert.Equal(t, i, got)
	}
}

func caseFillIDTime(t *testing.T, bus event.Bus) {
	sub := Subscribe(t, bus, "fill.>")
	require.NoError(t, bus.Publish(t.Context(), event.Envelope{Subject: "fill.bare"}))
	got := Receive(t, sub)
	assert.Len(t, got.ID, event.IDLen)
	assert.False(t, got.Time.IsZero())

	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	require.NoError(t, bus.Publish(t.Context(), event.Envelope{ID: "fixed", Subject: "fill.set", Time: at}))
	got = Receive(t, sub)
	assert.Equal(t, "fixed", got.ID)
	assert.True(t, at.Equal(got.Time))
}

func caseInvalidSubject(t *testing.T, bus event.Bus) {
	for _, s := range []string{"", "a..b", ".a", "a.", "a.*", "a.>", "a*b", string(make([]byte, 1025))} {
		err := bus.Publish(t.Context(), event.Envelope{Subject: s})
		assert.ErrorIs(t, err, event.ErrInvalidSubject, "%q", s)
		assert.ErrorIs(t, err, fault.Validation, "%q", s)
	}
}

func caseInvalidPattern(t *testing.T, bus event.Bus) {
	for _, p := range []string{"", "a..b", "a.>.b", ">.a", "a*", "a.b>", "a.**"} {
		_, err := bus.Subscribe(t.Context(), p, event.SubConfig{})
		assert.ErrorIs(t, err, event.ErrInvalidPattern, "%q", p)
		assert.ErrorIs(t, err, fault.Validation, "%q", p)
	}
}

func caseBufferLimits(t *testing.T, bus event.Bus) {
	for _, n := range []int{event.MaxBufferSize + 1, -1} {
		_, err := bus.Subscribe(t.Context(), "a", event.SubConfig{BufferSize: n})
		assert.ErrorIs(t, err, fault.Validation, "buffer %d", n)
	}
	sub, err := bus.Subscribe(t.Context(), "a", event.SubConfig{BufferSize: 1})
	require.NoError(t, err)
	require.NoError(t, sub.Close())
}

func caseClosedBus(t *testing.T, bus event.Bus) {
	require.NoError(t, bus.Close())
	err := bus.Publish(t.Context(), event.Envelope{Subject: "a"})
	assert.ErrorIs(t, err, event.ErrBusClosed)
	assert.ErrorIs(t, err, fault.NotAvailable)
	_, err = bus.Subscribe(t.Context(), "a", event.SubConfig{})
	assert.ErrorIs(t, err, event.ErrBusClosed)
	assert.ErrorIs(t, err, fault.NotAvailable)
}

func caseCloseIdempotent(t *testing.T, bus event.Bus) {
	a, b := Subscribe(t, bus, "a"), Subscribe(t, bus, "b.>")
	Publish(t, bus, "a", nil)
	require.NoError(t, bus.Close())
	require.NoError(t, bus.Close())
	AssertClosed(t, a)
	AssertClosed(t, b)
}

func caseCtxCancel(t *testing.T, bus event.Bus) {
	ctx, cancel := context.WithCancel(t.Context())
	gone, err := bus.Subscribe(ctx, "a", event.SubConfig{})
	require.NoError(t, err)
	kept := Subscribe(t, bus, "a")
	cancel()
	AssertClosed(t, gone)
	Publish(t, bus, "a", nil)
	assert.Equal(t, "a", Receive(t, kept).Subject)
}

func caseSubscriptionClose(t *testing.T, bus event.Bus) {
	gone, kept := Subscribe(t, bus, "a"), Subscribe(t, bus, "a")
	require.NoError(t, gone.Close())
	require.NoError(t, gone.Close())
	AssertClosed(t, gone)
	Publish(t, bus, "a", nil)
	assert.Equal(t, "a", Receive(t, kept).Subject)
}

func casePattern(t *testing.T, bus event.Bus) {
	for _, p := range []string{"a", "a.*.c", "a.>"} {
		assert.Equal(t, p, Subscribe(t, bus, p).Pattern())
	}
}

func payloads(t *testing.T, sub event.Subscription, n int) []string {
	t.Helper()
	var out []string
	for range n {
		var s string
		require.NoError(t, Receive(t, sub).Decode(&s))
		out = append(out, s)
	}
	return out
}

func caseDropNewest(t *testing.T, bus event.Bus) {
	rec := NewRecorder()
	defer bus.AttachObserver(rec)()
	explicit := SubscribeWithConfig(t, bus, "q", event.SubConfig{BufferSize: 1, Backpressure: event.DropNewest})
	byDefault := SubscribeWithConfig(t, bus, "q", event.SubConfig{BufferSize: 1})
	Publish(t, bus, "q", "first")
	Publish(t, bus, "q", "second")
	for _, sub := range []event.Subscription{explicit, byDefault} {
		assert.Equal(t, []string{"first"}, payloads(t, sub, 1))
		AssertEmpty(t, sub)
	}
	assert.Equal(t, []string{"q|second|buffer_full", "q|second|buffer_full"}, rec.Drops())
}

func caseDropOldest(t *testing.T, bus event.Bus) {
	rec := NewRecorder()
	defer bus.AttachObserver(rec)()
	sub := SubscribeWithConfig(t, bus, "q", event.SubConfig{BufferSize: 2, Backpressure: event.DropOldest})
	for _, s := range []string{"one", "two", "three", "four"} {
		Publish(t, bus, "q", s)
	}
	assert.Equal(t, []string{"three", "four"}, payloads(t, sub, 2))
	assert.Equal(t, []string{"q|one|buffer_full", "q|two|buffer_full"}, rec.Drops())
}

// blockedPublish fills a Block subscription of buffer 1 and starts a second
// publish that must wait; it returns the channel of that publish's error.
func blockedPublish(t *testing.T, bus event.Bus, ctx context.Context) (event.Subscription, <-chan error) {
	t.Helper()
	sub := SubscribeWithConfig(t, bus, "q", event.SubConfig{BufferSize: 1, Backpressure: event.Block})
	Publish(t, bus, "q", "first")
	done := make(chan error, 1)
	go func() {
		env, _ := event.NewEnvelope(context.Background(), "q", "second")
		done <- bus.Publish(ctx, env)
	}()
	time.Sleep(20 * time.Millisecond) // let the publisher reach the full buffer
	select {
	case err := <-done:
		require.FailNow(t, "publish did not wait", "it returned %v while the buffer was full", err)
	default:
	}
	return sub, done
}

func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(Wait):
		require.FailNow(t, "publisher still blocked", "after %s", Wait)
	}
	return nil
}

func caseBlockWaits(t *testing.T, bus event.Bus) {
	sub, done := blockedPublish(t, bus, t.Context())
	assert.Equal(t, []string{"first"}, payloads(t, sub, 1))
	require.NoError(t, waitErr(t, done))
	assert.Equal(t, []string{"second"}, payloads(t, sub, 1))
}

func caseBlockCtx(t *testing.T, bus event.Bus) {
	ctx, cancel := context.WithCancel(t.Context())
	_, done := blockedPublish(t, bus, ctx)
	cancel()
	assert.ErrorIs(t, waitErr(t, done), context.Canceled)
}

func caseBlockSubClose(t *testing.T, bus event.Bus) {
	rec := NewRecorder()
	defer bus.AttachObserver(rec)()
	sub, done := blockedPublish(t, bus, t.Context())
	require.NoError(t, sub.Close())
	require.NoError(t, waitErr(t, done))
	assert.Equal(t, []string{"q|second|closed"}, rec.Drops())
}

func caseBlockBusClose(t *testing.T, bus event.Bus) {
	sub, done := blockedPublish(t, bus, t.Context())
	require.NoError(t, bus.Close())
	err := waitErr(t, done)
	if err != nil {
		assert.ErrorIs(t, err, event.ErrBusClosed)
	}
	AssertClosed(t, sub)
}

func caseSample(t *testing.T, bus event.Bus) {
	rec := NewRecorder()
	defer bus.AttachObserver(rec)()
	keep := SubscribeWithConfig(t, bus, "s", event.SubConfig{Backpressure: event.Sample, SampleRate: 1})
	keepClamped := SubscribeWithConfig(t, bus, "s", event.SubConfig{Backpressure: event.Sample, SampleRate: 7})
	keepByDefault := SubscribeWithConfig(t, bus, "s", event.SubConfig{Backpressure: event.Sample})
	drop := SubscribeWithConfig(t, bus, "s", event.SubConfig{Backpressure: event.Sample, SampleRate: -1})
	dropClamped := SubscribeWithConfig(t, bus, "s", event.SubConfig{Backpressure: event.Sample, SampleRate: -3})
	dropNaN := SubscribeWithConfig(t, bus, "s", event.SubConfig{Backpressure: event.Sample, SampleRate: math.NaN()})
	const n = 20
	for i := range n {
		Publish(t, bus, "s", i)
	}
	assert.Len(t, drainNow(keep), n)
	assert.Len(t, drainNow(keepClamped), n)
	assert.Len(t, drainNow(keepByDefault), n, "a zero rate is the default, 1")
	assert.Empty(t, drainNow(drop))
	assert.Empty(t, drainNow(dropClamped))
	assert.Empty(t, drainNow(dropNaN))
	drops := rec.Drops()
	assert.Len(t, drops, 3*n)
	for _, d := range drops {
		assert.Contains(t, d, "|sampled")
	}
}

// drainNow returns what sub has buffered, without waiting.
func drainNow(sub event.Subscription) []event.Envelope {
	var out []event.Envelope
	for {
		select {
		case env, ok := <-sub.C():
			if !ok {
				return out
			}
			out = append(out, env)
		default:
			return out
		}
	}
}

func casePredicate(t *testing.T, bus event.Bus) {
	even := func(env event.Envelope) bool {
		var n int
		return json.Unmarshal(env.Payload, &n) == nil && n%2 == 0
	}
	sub := SubscribeWithConfig(t, bus, "n.*", event.SubConfig{Predicate: even, BufferSize: 10})
	for i := range 6 {
		Publish(t, bus, "n.x", i)
	}
	Publish(t, bus, "m.x", 8)
	var got []int
	for _, env := range drainNow(sub) {
		var n int
		require.NoError(t, env.Decode(&n))
		got = append(got, n)
	}
	assert.Equal(t, []int{0, 2, 4}, got)
}

func caseObservers(t *testing.T, bus event.Bus) {
	rec := NewRecorder()
	detach := bus.AttachObserver(rec)
	Subscribe(t, bus, "o.*")
	Subscribe(t, bus, "o.>")
	Publish(t, bus, "o.a", "x")
	Publish(t, bus, "p.a", "y")
	assert.Equal(t, []string{"o.a", "p.a"}, rec.Publishes())
	assert.ElementsMatch(t, []string{"o.*|o.a", "o.>|o.a"}, rec.Deliveries())
	detach()
	detach()
	Publish(t, bus, "o.b", "z")
	assert.Equal(t, []string{"o.a", "p.a"}, rec.Publishes())
}

func caseObserverOutsideLocks(t *testing.T, bus event.Bus) {
	subscribed := make(chan error, 1)
	var started atomic.Bool
	obs := event.ObserverFuncs{Publish: func(env event.Envelope) {
		if !started.CompareAndSwap(false, true) {
			return
		}
		go func() {
			sub, err := bus.Subscribe(context.Background(), "other", event.SubConfig{})
			if err == nil {
				_ = sub.Close()
			}
			subscribed <- err
		}()
		select {
		case err := <-subscribed:
			assert.NoError(t, err)
		case <-time.After(Wait):
			assert.Fail(t, "Subscribe waited for an observer callback: callbacks hold a bus lock")
		}
	}}
	defer bus.AttachObserver(obs)()
	Subscribe(t, bus, "a")
	Publish(t, bus, "a", nil)
	assert.True(t, started.Load())
}
