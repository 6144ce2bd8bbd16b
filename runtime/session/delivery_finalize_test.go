package session

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// finalize returns only after every sink drained or was detached.
//
// REF 2.4.6
func TestStreamFinalizeWaitsForDrain(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	slow := &recSink{fn: func(ctx context.Context, _ event.Envelope, _ event.StreamDeltaPayload) error {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return nil
	}}
	failing := agent.StreamSinkFunc(func(context.Context, event.Envelope, event.StreamDeltaPayload) error {
		return errors.New("gone")
	})
	h := newHarness(t, streamConfig{}, SinkSpec{ID: "slow", Sink: slow}, SinkSpec{ID: "failing", Sink: failing})
	for _, s := range []string{"a", "b", "c"} {
		h.text(s)
	}
	h.runEnd()
	done := make(chan error, 1)
	go func() { done <- h.finalize(1) }()
	select {
	case <-done:
		t.Fatal("finalize returned before the slow sink drained")
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("finalize did not return")
	}
	assert.Equal(t, []string{"a", "b", "c", "end"}, labels(slow.all()), "every envelope arrived before finalize returned")
	assert.Zero(t, h.s.attached())
}

// finalize's wait for the sinks is bounded by its ctx: when it ends first,
// the sinks still draining are detached and the ctx error is returned.
//
// REF 2.4.6
func TestStreamFinalizeDrainBoundedByCtx(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	var once sync.Once
	stuck := &recSink{fn: func(ctx context.Context, _ event.Envelope, _ event.StreamDeltaPayload) error {
		once.Do(func() { close(entered) })
		<-ctx.Done()
		return ctx.Err()
	}}
	var log detachLog
	h := newHarness(t, streamConfig{}, SinkSpec{ID: "s", Sink: stuck, OnDetach: log.fn("s")})
	h.text("a")
	h.runEnd()
	<-entered
	h.waitRunEnds(1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.s.finalize(ctx, 1, agent.StatusCompleted, nil) }()
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, fault.Aborted)
		assert.ErrorContains(t, err, "wait for sinks to drain")
	case <-time.After(waitFor):
		t.Fatal("finalize ignored its ctx")
	}
	assert.ErrorIs(t, log.wait(t, "s"), context.Canceled)
	assert.Zero(t, h.s.attached())
}

// finalize waits for as many engine run-ends as the run had attempts,
// then sends one logical run-end; the engine's run-ends are not forwarded.
//
// REF 2.4.11
func TestStreamAttempts(t *testing.T) {
	t.Parallel()
	raw, conf := &recSink{}, &recSink{}
	h := newHarness(t, streamConfig{}, SinkSpec{ID: "raw", Sink: raw},
		SinkSpec{ID: "conf", Sink: conf, Visibility: VisibilityConfirmed})
	h.text("try1")
	h.runEnd()
	done := make(chan error, 1)
	go func() { done <- h.finalize(2) }()
	h.text("try2")
	raw.waitN(t, 2)
	select {
	case <-done:
		t.Fatal("finalize returned after one of two run-ends")
	case <-time.After(20 * time.Millisecond):
	}
	h.runEnd()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("finalize did not return")
	}
	assert.Equal(t, []string{"try1", "try2", "end"}, labels(raw.all()))
	assert.Equal(t, []string{"try1", "try2", "end"}, labels(conf.all()))
	assert.Equal(t, []uint64{1, 2, 3}, cursors(t, conf.all()))
}

// When the engine never publishes its run-end, finalize gives up after
// its budget, detaches the sinks and returns the error; a reported
// RunEndPublishError detaches them at once with that error.
//
// REF 2.4.12
func TestStreamFinalizeWithoutRunEnd(t *testing.T) {
	t.Parallel()
	t.Run("budget", func(t *testing.T) {
		t.Parallel()
		var log detachLog
		sink := &recSink{}
		h := newHarness(t, streamConfig{finalizeBudget: 30 * time.Millisecond}, SinkSpec{ID: "s", Sink: sink, OnDetach: log.fn("s")})
		h.text("a")
		err := h.finalize(1)
		require.ErrorIs(t, err, fault.Timeout)
		assert.ErrorContains(t, err, "0 of 1 engine run-ends")
		assert.ErrorIs(t, log.wait(t, "s"), fault.Timeout)
		assert.NotContains(t, labels(sink.all()), "end", "no run-end after a finalize error")
		assert.Zero(t, h.s.attached())
	})
	t.Run("ctx", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, streamConfig{finalizeBudget: time.Hour}, SinkSpec{ID: "s", Sink: nopSink})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := h.s.finalize(ctx, 1, agent.StatusCompleted, nil)
		require.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, fault.Aborted)
		assert.Zero(t, h.s.attached())
	})
	t.Run("bus closed", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, streamConfig{finalizeBudget: time.Hour}, SinkSpec{ID: "s", Sink: nopSink})
		require.NoError(t, h.bus.Close())
		err := h.finalize(1)
		require.ErrorIs(t, err, fault.NotAvailable)
		assert.ErrorContains(t, err, "subscription ended")
	})
	t.Run("run-end publish error", func(t *testing.T) {
		t.Parallel()
		var log detachLog
		sink := &recSink{}
		h := newHarness(t, streamConfig{finalizeBudget: time.Hour}, SinkSpec{ID: "s", Sink: sink, OnDetach: log.fn("s")})
		h.text("a")
		sink.waitN(t, 1)
		rep := &agent.RunEndPublishError{RunID: h.run, Err: errors.New("bus full")}
		runErr := errors.Join(errors.New("engine failed"), rep)
		require.NoError(t, h.s.finalize(context.Background(), 1, agent.StatusFailed, runErr))
		var got *agent.RunEndPublishError
		require.ErrorAs(t, log.wait(t, "s"), &got)
		assert.Same(t, rep, got)
		assert.Equal(t, []string{"a"}, labels(sink.all()))
	})
}

// With no sink attached finalize returns at once, even though no run-end
// was published and the budget is an hour.
//
// REF 2.4.13
func TestStreamFinalizeWithoutSinks(t *testing.T) {
	t.Parallel()
	t.Run("none given", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, streamConfig{finalizeBudget: time.Hour})
		assert.Zero(t, h.bus.Subscriptions(), "no sinks, no subscription")
		finalizeReturns(t, h)
	})
	t.Run("all detached", func(t *testing.T) {
		t.Parallel()
		failing := agent.StreamSinkFunc(func(context.Context, event.Envelope, event.StreamDeltaPayload) error {
			return errors.New("gone")
		})
		h := newHarness(t, streamConfig{finalizeBudget: time.Hour}, SinkSpec{ID: "s", Sink: failing})
		h.text("a")
		require.Eventually(t, func() bool { return h.s.attached() == 0 }, waitFor, time.Millisecond)
		finalizeReturns(t, h)
		assert.Zero(t, h.bus.Subscriptions(), "finalize ended the subscription")
	})
}

// With no attempt (the engine never ran) finalize awaits no run-end and
// sends the logical one at once.
//
// REF 2.4.11
func TestStreamFinalizeWithoutAttempts(t *testing.T) {
	t.Parallel()
	sink := &recSink{}
	h := newHarness(t, streamConfig{finalizeBudget: time.Hour}, SinkSpec{ID: "s", Sink: sink})
	require.NoError(t, h.s.finalize(context.Background(), 0, agent.StatusFailed, errors.New("no host")))
	got := sink.all()
	require.Equal(t, []string{"end"}, labels(got))
	assert.Equal(t, RunEndPayload{Status: agent.StatusFailed, Error: "no host"}, decodeRunEnd(t, got[0]))
}

func finalizeReturns(t *testing.T, h *harness) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.finalize(1) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("finalize waited with no sink attached")
	}
}
