package session

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A sink stuck in OnDelta holds up neither the other sinks nor the
// publisher.
//
// REF 2.4.1
func TestStreamEachSinkHasItsOwnQueue(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := &recSink{fn: func(ctx context.Context, _ event.Envelope, _ event.StreamDeltaPayload) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}}
	fast := &recSink{}
	h := newHarness(t, streamConfig{}, SinkSpec{ID: "slow", Sink: slow, QueueSize: 16}, SinkSpec{ID: "fast", Sink: fast})
	for _, s := range []string{"a", "b", "c"} {
		h.text(s)
	}
	assert.Equal(t, []string{"a", "b", "c"}, labels(fast.waitN(t, 3)))
	assert.Empty(t, slow.all())
	close(release)
	assert.Equal(t, []string{"a", "b", "c"}, labels(slow.waitN(t, 3)))
	assert.Equal(t, 2, h.s.attached())
}

// A full queue detaches the sink with ErrSinkQueueFull and the publisher
// never waits for it; the other sinks carry on.
//
// REF 2.4.2
func TestStreamQueueFullDetaches(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stuck := &recSink{fn: func(context.Context, event.Envelope, event.StreamDeltaPayload) error {
		<-release // ignores ctx on purpose
		return nil
	}}
	other := &recSink{}
	var log detachLog
	h := newHarness(t, streamConfig{},
		SinkSpec{ID: "stuck", Sink: stuck, QueueSize: 2, DeliveryTimeout: time.Hour, OnDetach: log.fn("stuck")},
		SinkSpec{ID: "other", Sink: other, QueueSize: 64})
	published := make(chan struct{})
	go func() {
		defer close(published)
		for range 10 {
			h.text("x")
		}
	}()
	select {
	case <-published:
	case <-time.After(waitFor):
		t.Fatal("publishing blocked on a full sink queue")
	}
	err := log.wait(t, "stuck")
	assert.ErrorIs(t, err, ErrSinkQueueFull)
	assert.ErrorIs(t, err, fault.BudgetExceeded)
	assert.ErrorContains(t, err, `sink "stuck"`)
	other.waitN(t, 10)
	require.Eventually(t, func() bool { return h.s.attached() == 1 }, waitFor, time.Millisecond)
}

// A sink's calls are made one at a time, in order, whatever the cap.
//
// REF 2.4.3
func TestStreamDeliveryConcurrency(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{1, 4} {
		sink := &recSink{fn: func(context.Context, event.Envelope, event.StreamDeltaPayload) error {
			time.Sleep(50 * time.Microsecond)
			return nil
		}}
		h := newHarness(t, streamConfig{deliveryConcurrency: limit}, SinkSpec{ID: "s", Sink: sink})
		want := make([]string, 40)
		for i := range want {
			want[i] = string(rune('A' + i))
			h.text(want[i])
		}
		assert.Equal(t, want, labels(sink.waitN(t, len(want))))
		assert.EqualValues(t, 1, sink.maxInFlight.Load(), "calls of one sink never overlap (cap %d)", limit)
	}
}

// REF 2.4.4
func TestStreamSinkErrorDetaches(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	calls := 0
	sink := &recSink{fn: func(context.Context, event.Envelope, event.StreamDeltaPayload) error {
		calls++
		if calls == 2 {
			return boom
		}
		return nil
	}}
	var log detachLog
	h := newHarness(t, streamConfig{}, SinkSpec{ID: "s", Sink: sink, OnDetach: log.fn("s")})
	h.text("a")
	h.text("b")
	h.text("c")
	err := log.wait(t, "s")
	assert.ErrorIs(t, err, boom)
	assert.ErrorContains(t, err, `sink "s"`)
	assert.Equal(t, []string{"a"}, labels(sink.all()), "nothing is delivered after the error")
	assert.Zero(t, h.s.attached())
	require.Eventually(t, func() bool { return h.changes.Load() > 0 }, waitFor, time.Millisecond, "onChange ran")
}

// A call past DeliveryTimeout detaches the sink, whether or not the sink
// watches its ctx; the call's ctx carries the deadline.
//
// REF 2.4.4
// REF 2.4
func TestStreamDeliveryTimeoutDetaches(t *testing.T) {
	t.Parallel()
	for _, watchesCtx := range []bool{true, false} {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		var deadlineSet atomic.Bool
		sink := &recSink{fn: func(ctx context.Context, _ event.Envelope, _ event.StreamDeltaPayload) error {
			_, ok := ctx.Deadline()
			deadlineSet.Store(ok)
			if watchesCtx {
				<-ctx.Done()
				return ctx.Err()
			}
			<-release
			return nil
		}}
		var log detachLog
		h := newHarness(t, streamConfig{}, SinkSpec{ID: "s", Sink: sink, DeliveryTimeout: 20 * time.Millisecond, OnDetach: log.fn("s")})
		h.text("a")
		err := log.wait(t, "s")
		assert.ErrorIs(t, err, fault.Timeout, "watches ctx: %v", watchesCtx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Zero(t, h.s.attached())
		if watchesCtx {
			assert.True(t, deadlineSet.Load())
		}
		// finalize does not wait for the stuck call.
		require.NoError(t, h.finalize(1))
	}
}

// REF 2.4
func TestStreamSpecDefaults(t *testing.T) {
	t.Parallel()
	h := newHarness(t, streamConfig{sinkBuffer: 7},
		SinkSpec{ID: "default", Sink: nopSink},
		SinkSpec{ID: "own", Sink: nopSink, QueueSize: 3, DeliveryTimeout: time.Second},
		SinkSpec{ID: "auth", Sink: nopSink, QueueSize: 5, Visibility: VisibilityConfirmed, Authority: AuthorityAuthoritative, AckMode: AckExplicit})
	q := h.s.sinks
	assert.Equal(t, 7, cap(q[0].items), "QueueSize 0 takes the sink buffer")
	assert.Equal(t, defaultDeliveryTimeout, q[0].timeout, "DeliveryTimeout 0 is 30 s")
	assert.Equal(t, 3, cap(q[1].items))
	assert.Equal(t, time.Second, q[1].timeout)
	assert.EqualValues(t, 5, h.s.auth.maxUnacked, "MaxUnacked 0 is the queue size")

	d := streamConfig{}.withDefaults()
	assert.Equal(t, 256, d.sinkBuffer)
	assert.Equal(t, 8, d.deliveryConcurrency)
	assert.Equal(t, 1024, d.speculativeEvents)
	assert.Equal(t, 1<<20, d.speculativeBytes)
	assert.Equal(t, 5*time.Second, d.finalizeBudget)
}

// OnDetach runs on its own goroutine, once, and a panic in it is
// recovered.
//
// REF 2.4
func TestStreamOnDetachAsyncAndRecovered(t *testing.T) {
	t.Parallel()
	called := make(chan error, 2)
	boom := errors.New("boom")
	sink := agent.StreamSinkFunc(func(context.Context, event.Envelope, event.StreamDeltaPayload) error { return boom })
	block := make(chan struct{})
	h := newHarness(t, streamConfig{}, SinkSpec{ID: "s", Sink: sink, OnDetach: func(err error) {
		<-block // a blocking OnDetach holds up nothing
		called <- err
		panic("from OnDetach")
	}})
	h.text("a")
	require.Eventually(t, func() bool { return h.s.attached() == 0 }, waitFor, time.Millisecond)
	h.text("b") // the stream still routes
	close(block)
	select {
	case err := <-called:
		assert.ErrorIs(t, err, boom)
	case <-time.After(waitFor):
		t.Fatal("OnDetach was not called")
	}
	require.NoError(t, h.finalize(1))
	assert.Empty(t, called, "OnDetach runs once")
}

// Raw sinks get every envelope of the run in bus order: non-delta
// envelopes with an empty delta, speculative deltas at once, and the
// engine's run-end only as the one logical run-end, last.
//
// REF 2.4.7
func TestStreamRawOrder(t *testing.T) {
	t.Parallel()
	sink := &recSink{}
	h := newHarness(t, streamConfig{}, SinkSpec{ID: "raw", Sink: sink})
	h.step("n1")
	h.text("a")
	h.spec("f", "b1", "s1")
	h.publish(event.SubjectParallelFork(h.run), event.ParallelPayload{ForkID: "f", Branches: []string{"b1"}})
	h.cancel("f", "b1")
	h.text("b")
	h.runEnd()
	require.NoError(t, h.finalize(1))
	got := sink.all()
	assert.Equal(t, []string{"start", "a", "s1", "fork", "cancel:f/b1", "b", "end"}, labels(got))
	assert.Equal(t, event.StreamDeltaPayload{}, got[0].delta, "a step event arrives with an empty delta")
	assert.True(t, got[2].delta.Speculative)
	for _, d := range got {
		assert.NotContains(t, d.env.Headers, event.HeaderDeliveryCursor, "raw envelopes carry no cursor")
	}
}

// Delivering the run-end completes a sink normally: OnDetach(nil), and it
// no longer counts as attached.
//
// REF 2.4.5
func TestStreamRunEndCompletesSink(t *testing.T) {
	t.Parallel()
	var log detachLog
	raw, conf := &recSink{}, &recSink{}
	h := newHarness(t, streamConfig{},
		SinkSpec{ID: "raw", Sink: raw, OnDetach: log.fn("raw")},
		SinkSpec{ID: "conf", Sink: conf, Visibility: VisibilityConfirmed, OnDetach: log.fn("conf")})
	h.text("a")
	h.runEnd()
	require.NoError(t, h.s.finalize(context.Background(), 1, agent.StatusFailed, errors.New("model down")))
	assert.NoError(t, log.wait(t, "raw"))
	assert.NoError(t, log.wait(t, "conf"))
	assert.Zero(t, h.s.attached())
	for _, s := range []*recSink{raw, conf} {
		got := s.all()
		require.Equal(t, []string{"a", "end"}, labels(got))
		end := got[1]
		assert.Equal(t, event.SubjectRunEnd(h.run), end.env.Subject)
		assert.Equal(t, h.run, end.env.Header(event.HeaderRunID))
		assert.Equal(t, RunEndPayload{Status: agent.StatusFailed, Error: "model down"}, decodeRunEnd(t, end))
	}
}

// The subscription uses Block: a burst far larger than any buffer reaches
// the sinks whole.
//
// REF 2.4.7
func TestStreamLosesNothing(t *testing.T) {
	t.Parallel()
	sink := &recSink{}
	h := newHarness(t, streamConfig{sinkBuffer: 4096}, SinkSpec{ID: "s", Sink: sink})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				h.text("x")
			}
		})
	}
	wg.Wait()
	h.runEnd()
	require.NoError(t, h.finalize(1))
	assert.Len(t, sink.all(), 2001)
	assert.Zero(t, h.bus.Dropped())
}

// close detaches what is attached, is idempotent, and stops every
// goroutine the stream started.
//
// REF 2.4.6
func TestStreamCloseStopsEverything(t *testing.T) { // not parallel: counts goroutines
	checkGoroutines(t)
	bus := event.NewMemoryBus()
	defer func() { _ = bus.Close() }()
	var log detachLog
	block := &recSink{fn: func(ctx context.Context, _ event.Envelope, _ event.StreamDeltaPayload) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	s, err := startStream(context.Background(), bus, streamConfig{runID: testRun}, []SinkSpec{
		{ID: "a", Sink: block, OnDetach: log.fn("a")},
		{ID: "b", Sink: nopSink, Visibility: VisibilityConfirmed, OnDetach: log.fn("b")},
	})
	require.NoError(t, err)
	env, err := event.NewEnvelope(context.Background(), event.SubjectStreamDelta(testRun, "x"), textDelta("a"))
	require.NoError(t, err)
	require.NoError(t, bus.Publish(context.Background(), env))
	require.Eventually(t, func() bool { return block.inFlight.Load() == 1 }, waitFor, time.Millisecond)
	s.close()
	s.close()
	assert.ErrorIs(t, log.wait(t, "a"), fault.Aborted)
	assert.ErrorIs(t, log.wait(t, "b"), fault.Aborted)
	assert.Zero(t, s.attached())
	assert.Zero(t, bus.Subscriptions())
	require.NoError(t, s.finalize(context.Background(), 1, agent.StatusCompleted, nil), "finalize after close returns at once")
	assert.Equal(t, 1, log.count("a"))
}
