package event_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/event/eventtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 1.5.2
func TestAttachArguments(t *testing.T) {
	t.Parallel()
	r := newRouter(t, newBus(t))
	sink := make(chanSink)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		pattern string
		sink    event.Sink
		opts    []event.AttachOption
		is      []error
	}{
		{"nil ctx", nil, "a", sink, nil, []error{fault.Validation}},
		{"nil sink", context.Background(), "a", nil, nil, []error{fault.Validation}},
		{"invalid pattern", context.Background(), "a.>.b", sink, nil, []error{event.ErrInvalidPattern, fault.Validation}},
		{"buffer too big", context.Background(), "a", sink, []event.AttachOption{event.WithAttachBufferSize(1<<20 + 1)}, []error{fault.Validation}},
		{"negative buffer", context.Background(), "a", sink, []event.AttachOption{event.WithAttachBufferSize(-1)}, []error{fault.Validation}},
		{"bad policy", context.Background(), "a", sink, []event.AttachOption{event.WithAttachBackpressure(42)}, []error{fault.Validation}},
		{"ended ctx", cancelled, "a", sink, nil, []error{fault.Aborted, context.Canceled}},
	}
	for _, c := range cases {
		detach, err := r.Attach(c.ctx, c.pattern, c.sink, c.opts...)
		assert.Nil(t, detach, c.name)
		for _, want := range c.is {
			assert.ErrorIs(t, err, want, c.name)
		}
	}
	assert.Zero(t, r.Attachments())
	empty := newRouter(t) // no bus, so no buffer is allocated
	detach, err := empty.Attach(context.Background(), "a", sink, event.WithAttachBufferSize(1<<20))
	require.NoError(t, err, "the maximum buffer is allowed")
	detach()
}

// REF 1.5.2
func TestAttachWithNoBusesStillValidates(t *testing.T) {
	t.Parallel()
	r := newRouter(t)
	_, err := r.Attach(context.Background(), "a*", make(chanSink))
	assert.ErrorIs(t, err, event.ErrInvalidPattern)
}

// gateSink holds every OnEvent until release is closed, reporting each
// start on started.
type gateSink struct {
	started chan event.Envelope
	release chan struct{}
}

func newGateSink() *gateSink {
	return &gateSink{started: make(chan event.Envelope, 1024), release: make(chan struct{})}
}

func (g *gateSink) OnEvent(ctx context.Context, env event.Envelope) error {
	g.started <- env
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return nil
}

// REF 1.5.3
func TestAttachBufferAndDefaultDropNewest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts []event.AttachOption
		buf  int
	}{
		{"default buffer 64", nil, 64},
		{"explicit buffer", []event.AttachOption{event.WithAttachBufferSize(3)}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBus(t)
			r := newRouter(t, b)
			sink := newGateSink()
			defer close(sink.release)
			attach(t, r, "f", sink, c.opts...)
			eventtest.Publish(t, b, "f", 0)
			<-sink.started // the sink holds envelope 0; the buffer is empty
			const extra = 10
			for i := range c.buf + extra {
				eventtest.Publish(t, b, "f", i+1) // never blocks: DropNewest by default
			}
			assert.Equal(t, uint64(extra), b.Dropped())
		})
	}
}

// REF 1.5.3
func TestAttachWithBlockBackpressure(t *testing.T) {
	t.Parallel()
	b := newBus(t)
	r := newRouter(t, b)
	sink := newGateSink()
	attach(t, r, "f", sink, event.WithAttachBackpressure(event.Block), event.WithAttachBufferSize(1))
	eventtest.Publish(t, b, "f", 0)
	<-sink.started
	eventtest.Publish(t, b, "f", 1) // fills the buffer
	done := make(chan error, 1)
	go func() { done <- b.Publish(context.Background(), event.Envelope{Subject: "f"}) }()
	time.Sleep(20 * time.Millisecond)
	select {
	case <-done:
		require.FailNow(t, "a Block attachment must make the publisher wait")
	default:
	}
	close(sink.release)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(eventtest.Wait):
		require.FailNow(t, "the publisher stayed blocked")
	}
	assert.Zero(t, b.Dropped())

	r2 := event.NewRouterWithConfig(event.RouterConfig{DefaultAttachBackpressure: event.Block})
	defer r2.Close()
	require.NoError(t, r2.AddBus(b))
	gate := newGateSink()
	defer close(gate.release)
	attach(t, r2, "g", gate)
	eventtest.Publish(t, b, "g", nil)
	<-gate.started // the sink holds one; the buffer is empty
	for range event.DefaultBufferSize {
		eventtest.Publish(t, b, "g", nil)
	}
	blockedPublish := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	go func() { blockedPublish <- b.Publish(ctx, event.Envelope{Subject: "g"}) }()
	assert.ErrorIs(t, <-blockedPublish, context.Canceled, "the router default policy applies")
}

// REF 1.5.4
func TestAttachmentEnds(t *testing.T) {
	t.Parallel()
	b := newBus(t)
	r := newRouter(t, b)
	var detaches atomic.Int32
	onDetach := event.WithOnDetach(func(error) { detaches.Add(1) })

	viaDetach := make(chanSink, 4)
	detach := attach(t, r, "a", viaDetach, onDetach)

	ctx, cancel := context.WithCancel(context.Background())
	viaCtx := make(chanSink, 4)
	_, err := r.Attach(ctx, "a", viaCtx, onDetach)
	require.NoError(t, err)

	kept := make(chanSink, 4)
	attach(t, r, "a", kept)
	require.Equal(t, 3, r.Attachments())

	detach()
	detach() // idempotent
	cancel()
	require.Eventually(t, func() bool { return r.Attachments() == 1 && b.Subscriptions() == 1 }, eventtest.Wait, pollEvery)
	eventtest.Publish(t, b, "a", nil)
	kept.next(t)
	viaDetach.empty(t)
	viaCtx.empty(t)
	assert.Zero(t, detaches.Load(), "OnDetach reports sink errors only")
}

// REF 1.5.4
// REF 4.3.7
func TestSinkErrorDetachesOnlyThatAttachment(t *testing.T) {
	t.Parallel()
	b := newBus(t)
	r := newRouter(t, b)
	boom := errors.New("boom")
	reported := make(chan error, 2)
	var calls atomic.Int32
	failing := event.SinkFunc(func(context.Context, event.Envelope) error {
		calls.Add(1)
		return boom
	})
	attach(t, r, "a", failing, event.WithOnDetach(func(err error) { reported <- err }))
	kept := make(chanSink, 4)
	attach(t, r, "a", kept)

	eventtest.Publish(t, b, "a", nil)
	select {
	case err := <-reported:
		assert.ErrorIs(t, err, boom)
	case <-time.After(eventtest.Wait):
		require.FailNow(t, "OnDetach was not called")
	}
	kept.next(t)
	require.Eventually(t, func() bool { return r.Attachments() == 1 }, eventtest.Wait, pollEvery)
	eventtest.Publish(t, b, "a", nil)
	kept.next(t)
	assert.Equal(t, int32(1), calls.Load(), "a detached sink is not called again")
	assert.Empty(t, reported, "OnDetach is called once")
}

// REF 1.5.4
func TestSinkPanicDetachesWithInternalError(t *testing.T) {
	t.Parallel()
	b := newBus(t)
	r := newRouter(t, b)
	reported := make(chan error, 1)
	attach(t, r, "p", event.SinkFunc(func(context.Context, event.Envelope) error { panic("bad sink") }),
		event.WithOnDetach(func(err error) { reported <- err }))
	eventtest.Publish(t, b, "p", nil)
	select {
	case err := <-reported:
		assert.ErrorIs(t, err, fault.Internal)
		assert.ErrorContains(t, err, "bad sink")
	case <-time.After(eventtest.Wait):
		require.FailNow(t, "OnDetach was not called")
	}
}

// REF 1.5.4
func TestAttachmentSurvivesOneBusDying(t *testing.T) {
	t.Parallel()
	dying, alive := event.NewMemoryBus(), newBus(t)
	r := newRouter(t, dying, alive)
	sink := make(chanSink, 4)
	attach(t, r, "z", sink)
	require.NoError(t, dying.Close())
	eventtest.Publish(t, alive, "z", nil)
	assert.Equal(t, "z", sink.next(t).Subject)
	assert.Equal(t, 1, r.Attachments())

	later := make(chanSink, 4)
	attach(t, r, "z", later) // a closed bus is skipped, not an error
	eventtest.Publish(t, alive, "z", nil)
	later.next(t)
}
