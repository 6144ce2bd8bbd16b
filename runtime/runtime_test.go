package runtime_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collect is a sink that forwards envelopes to a channel.
type collect chan event.Envelope

func (c collect) OnEvent(_ context.Context, env event.Envelope) error {
	c <- env
	return nil
}

func receive(t *testing.T, c collect) event.Envelope {
	t.Helper()
	select {
	case env := <-c:
		return env
	case <-time.After(10 * time.Second):
		t.Fatal("no event arrived")
		return event.Envelope{}
	}
}

func publish(t *testing.T, rt *runtime.Runtime, subject string) {
	t.Helper()
	v, ok := rt.Resource("events")
	require.True(t, ok)
	require.NoError(t, v.(event.Bus).Publish(context.Background(), event.Envelope{Subject: subject}))
}

// REF 1.5.1, 1.5.4: Attach subscribes a sink to the router; detach
// ends it and is idempotent.
func TestAttach(t *testing.T) {
	rt, _ := build(t, minimalDoc)
	c := make(collect, 8)
	detach, err := rt.Attach(context.Background(), "agent.run.*.prompt.requested", c)
	require.NoError(t, err)
	publish(t, rt, "agent.run.other.start")
	publish(t, rt, "agent.run.r1.prompt.requested")
	assert.Equal(t, "agent.run.r1.prompt.requested", receive(t, c).Subject)
	detach()
	detach()
	publish(t, rt, "agent.run.r2.prompt.requested")
	select {
	case env := <-c:
		t.Fatalf("event after detach: %s", env.Subject)
	case <-time.After(50 * time.Millisecond):
	}
}

// REF 1.5.2: nil ctx and nil sink are Validation; a bad pattern is
// refused by the bus.
func TestAttachValidation(t *testing.T) {
	rt, _ := build(t, minimalDoc)
	//lint:ignore SA1012 the nil ctx is the point of the test
	_, err := rt.Attach(nil, "a.>", make(collect)) //nolint:staticcheck
	assert.ErrorIs(t, err, fault.Validation)
	_, err = rt.Attach(context.Background(), "a.>", nil)
	assert.ErrorIs(t, err, fault.Validation)
	_, err = rt.Attach(context.Background(), "a.>.b", make(collect))
	assert.ErrorIs(t, err, event.ErrInvalidPattern)
	var nilRT *runtime.Runtime
	_, err = nilRT.Attach(context.Background(), "a.>", make(collect))
	assert.ErrorIs(t, err, fault.Validation)
}

// REF 1.5.3: external attachments drop the newest envelope by
// default, and WithAttachBackpressure overrides it per attachment.
func TestAttachBackpressure(t *testing.T) {
	rt, _ := build(t, minimalDoc)
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	blocking := event.SinkFunc(func(_ context.Context, env event.Envelope) error {
		<-release
		mu.Lock()
		got = append(got, env.Subject)
		mu.Unlock()
		return nil
	})
	_, err := rt.Attach(context.Background(), "t.>", blocking, event.WithAttachBufferSize(1))
	require.NoError(t, err)
	for _, s := range []string{"t.1", "t.2", "t.3", "t.4"} {
		publish(t, rt, s)
	}
	close(release)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= 1 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	assert.Equal(t, "t.1", got[0], "DropNewest keeps the oldest envelopes")
	assert.Less(t, len(got), 4, "some envelopes were dropped")
	mu.Unlock()

	c := make(collect, 16)
	_, err = rt.Attach(context.Background(), "u.>", c, event.WithAttachBackpressure(event.Block), event.WithAttachBufferSize(1))
	require.NoError(t, err)
	for _, s := range []string{"u.1", "u.2", "u.3"} {
		publish(t, rt, s)
	}
	for _, s := range []string{"u.1", "u.2", "u.3"} {
		assert.Equal(t, s, receive(t, c).Subject, "Block loses nothing")
	}
}

// REF 1.5.3, 1.5.4: a sink error detaches that attachment only and is
// reported to WithOnDetach; ctx cancel ends an attachment.
func TestAttachEndsOnSinkErrorAndCtx(t *testing.T) {
	rt, _ := build(t, minimalDoc)
	boom := errors.New("boom")
	detached := make(chan error, 1)
	_, err := rt.Attach(context.Background(), "e.>", event.SinkFunc(func(context.Context, event.Envelope) error { return boom }),
		event.WithOnDetach(func(err error) { detached <- err }))
	require.NoError(t, err)
	other := make(collect, 8)
	_, err = rt.Attach(context.Background(), "e.>", other)
	require.NoError(t, err)
	publish(t, rt, "e.1")
	select {
	case err := <-detached:
		assert.ErrorIs(t, err, boom)
	case <-time.After(10 * time.Second):
		t.Fatal("no detach report")
	}
	receive(t, other)
	publish(t, rt, "e.2")
	assert.Equal(t, "e.2", receive(t, other).Subject, "the other attachment carries on")

	ctx, cancel := context.WithCancel(context.Background())
	c := make(collect, 8)
	_, err = rt.Attach(ctx, "f.>", c)
	require.NoError(t, err)
	cancel()
	time.Sleep(20 * time.Millisecond)
	publish(t, rt, "f.1")
	select {
	case env := <-c:
		t.Fatalf("event after ctx cancel: %s", env.Subject)
	case <-time.After(50 * time.Millisecond):
	}
}

// REF 1.4.1: Close is idempotent and concurrent callers get the same
// result.
func TestCloseIdempotent(t *testing.T) {
	rt, _ := build(t, minimalDoc)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = rt.Close() })
	}
	wg.Wait()
	for _, err := range errs {
		assert.Equal(t, errs[0], err)
	}
	assert.Equal(t, errs[0], rt.Close())
}

type failingCloser struct{ err error }

func (f failingCloser) Close() error { return f.err }

// REF 1.4.2, 1.4.3: Close tears down attachments, then closes
// resources in reverse build order; close errors are joined and returned to
// every caller.
func TestCloseOrderAndErrors(t *testing.T) {
	rt, log := build(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  a: {kind: test.Thing}
  b: {kind: test.Thing, deps: {dep: a}}
  c: {kind: test.Thing, deps: {dep: b}}
  broken: {kind: test.Failing}
runtime:
  event_bus: events
`)
	ended := make(chan struct{})
	_, err := rt.Attach(context.Background(), ">", event.SinkFunc(func(ctx context.Context, env event.Envelope) error {
		return nil
	}))
	require.NoError(t, err)
	go func() { _ = rt.Close(); close(ended) }()
	<-ended
	err = rt.Close()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "close broken failed")
	assert.Equal(t, []string{"c", "b", "a"}, log.get())
	_, ok := rt.Resource("a")
	assert.False(t, ok, "nothing is lent after Close")
}

// REF 1.4.4, 1.5.6: Attach after Close is NotAvailable.
func TestAttachAfterClose(t *testing.T) {
	rt, _ := build(t, minimalDoc)
	require.NoError(t, rt.Close())
	_, err := rt.Attach(context.Background(), ">", make(collect))
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.ErrorIs(t, err, runtime.ErrClosed)
}

// REF 1.5.6: Close tears down existing attachments: the sink sees
// nothing after Close and the router's goroutines are gone.
func TestCloseTearsDownAttachments(t *testing.T) {
	rt, _ := build(t, minimalDoc)
	v, _ := rt.Resource("events")
	bus := v.(event.Bus)
	c := make(collect, 8)
	_, err := rt.Attach(context.Background(), ">", c)
	require.NoError(t, err)
	require.NoError(t, rt.Close())
	assert.ErrorIs(t, bus.Publish(context.Background(), event.Envelope{Subject: "a.b"}), event.ErrBusClosed,
		"1.4.3: the generation's bus is closed with the runtime")
}

// REF 1.6.1, 1.6.3: Resource lends the current generation's values;
// an unknown name is (nil, false).
func TestResource(t *testing.T) {
	rt, _ := build(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  db: {kind: test.Thing}
runtime:
  event_bus: events
`)
	v, ok := rt.Resource("db")
	require.True(t, ok)
	assert.Equal(t, "db", v.(*thing).name)
	v, ok = rt.Resource("nope")
	assert.False(t, ok)
	assert.Nil(t, v)
}

// REF 1.3.6: a Build that fails leaves no goroutine behind.
func TestFailedBuildLeavesNoGoroutines(t *testing.T) {
	before := goroutines()
	for range 20 {
		buildErr(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
runtime:
  event_bus: nope
`)
	}
	noLeak(t, before)
}
