package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func authSpec(id string, sink agent.StreamSink) SinkSpec {
	return SinkSpec{ID: id, Sink: sink, Visibility: VisibilityConfirmed, Authority: AuthorityAuthoritative}
}

func explicitSpec(id string, sink agent.StreamSink, maxUnacked int) SinkSpec {
	s := authSpec(id, sink)
	s.AckMode, s.MaxUnacked = AckExplicit, maxUnacked
	return s
}

func prefixOf(t *testing.T, h *harness) string {
	t.Helper()
	p, ok := h.s.acknowledgedPrefix()
	require.True(t, ok)
	return p
}

// waitPrefix waits until the acknowledged prefix is want: a delivery is
// acknowledged just after OnDelta returns.
func waitPrefix(t *testing.T, h *harness, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return prefixOf(t, h) == want }, waitFor, time.Millisecond,
		"prefix %q, want %q", prefixOf(t, h), want)
}

// Text delivered to the authoritative sink builds the acknowledged prefix;
// only text parts of the confirmed stream count.
//
// REF 2.4.14
func TestStreamPrefixOnDelivery(t *testing.T) {
	t.Parallel()
	sink := &recSink{}
	h := newHarness(t, streamConfig{}, authSpec("ui", sink), SinkSpec{ID: "raw", Sink: &recSink{}})
	h.text("Hel")
	h.spec("f", "b", "held ")
	h.delta(event.StreamDeltaPayload{Type: event.DeltaPart, Part: &message.Part{Type: message.PartToolCall,
		ToolCall: &message.ToolCall{ID: "c1", Name: "t"}}})
	h.step("n2")
	h.text("lo")
	waitPrefix(t, h, "Hello") // held speculative text is not delivered yet
	h.accept("f", "b")
	waitPrefix(t, h, "Helloheld ")
	assert.Len(t, sink.all(), 6)
}

// An interrupt (freeze) or a detach of the authoritative sink freezes the
// prefix; a callback still running at the freeze is outside it.
//
// REF 2.4.14
func TestStreamPrefixFreezes(t *testing.T) {
	t.Parallel()
	t.Run("freeze", func(t *testing.T) {
		t.Parallel()
		entered, release := make(chan struct{}), make(chan struct{})
		sink := &recSink{fn: func(_ context.Context, _ event.Envelope, d event.StreamDeltaPayload) error {
			if d.Part != nil && d.Part.Text == "b" {
				close(entered)
				<-release
			}
			return nil
		}}
		h := newHarness(t, streamConfig{}, authSpec("ui", sink))
		h.text("a")
		h.text("b")
		<-entered
		h.s.freeze()
		close(release)
		h.text("c")
		sink.waitN(t, 3)
		assert.Equal(t, "a", prefixOf(t, h))
	})
	t.Run("detach", func(t *testing.T) {
		t.Parallel()
		sink := &recSink{fn: func(_ context.Context, _ event.Envelope, d event.StreamDeltaPayload) error {
			if d.Part != nil && d.Part.Text == "c" {
				return errors.New("gone")
			}
			return nil
		}}
		other := &recSink{}
		h := newHarness(t, streamConfig{}, authSpec("ui", sink), SinkSpec{ID: "obs", Sink: other, Visibility: VisibilityConfirmed})
		for _, s := range []string{"a", "b", "c", "d"} {
			h.text(s)
		}
		other.waitN(t, 4)
		require.Eventually(t, func() bool { return h.s.attached() == 1 }, waitFor, time.Millisecond)
		assert.Equal(t, "ab", prefixOf(t, h))
	})
}

// The prefix belongs to the current attempt: a new attempt starts it
// again.
//
// REF 2.4.14
// REF 2.4.11
func TestStreamPrefixPerAttempt(t *testing.T) {
	t.Parallel()
	sink := &recSink{}
	h := newHarness(t, streamConfig{}, authSpec("ui", sink))
	h.text("first")
	waitPrefix(t, h, "first")
	h.runEnd()
	h.step("n1")
	h.text("second")
	waitPrefix(t, h, "second")
	h.runEnd()
	require.NoError(t, h.finalize(2))
	assert.Equal(t, "second", prefixOf(t, h), "the run-end does not change it")
}

// REF 2.4.14
func TestStreamPrefixWithoutAuthority(t *testing.T) {
	t.Parallel()
	h := newHarness(t, streamConfig{}, SinkSpec{ID: "obs", Sink: &recSink{}, Visibility: VisibilityConfirmed})
	h.text("a")
	p, ok := h.s.acknowledgedPrefix()
	assert.False(t, ok)
	assert.Empty(t, p)
	h.s.freeze() // a no-op without an authoritative sink
}

// REF 2.4.15
func TestStreamAckRules(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	calls := 0
	sink := &recSink{fn: func(ctx context.Context, _ event.Envelope, _ event.StreamDeltaPayload) error {
		calls++
		if calls == 3 {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}}
	h := newHarness(t, streamConfig{}, explicitSpec("ui", sink, 0),
		SinkSpec{ID: "obs", Sink: &recSink{}, Visibility: VisibilityConfirmed})
	for _, s := range []string{"a", "b", "c"} {
		h.text(s)
	}
	<-entered // cursors 1 and 2 delivered, 3 offered

	require.ErrorIs(t, h.s.ack("ui", 0), fault.Validation, "cursor 0")
	require.ErrorIs(t, h.s.ack("obs", 1), fault.Validation, "an observer")
	require.ErrorIs(t, h.s.ack("nope", 1), fault.Validation, "an unknown sink")
	err := h.s.ack("ui", 4)
	require.ErrorIs(t, err, fault.Conflict, "beyond the offered cursor")
	assert.ErrorContains(t, err, "beyond the offered cursor 3")
	require.NoError(t, h.s.ack("ui", 2))
	assert.Equal(t, "ab", prefixOf(t, h))
	require.NoError(t, h.s.ack("ui", 1), "at or below the acked cursor: a no-op")
	require.NoError(t, h.s.ack("ui", 2))
	require.NoError(t, h.s.ack("ui", 3), "the cursor being offered")
	assert.Equal(t, "abc", prefixOf(t, h))
	h.s.freeze()
	require.NoError(t, h.s.ack("ui", 3), "a no-op even when frozen")
	require.ErrorIs(t, h.s.ack("ui", 4), fault.Conflict, "frozen")
}

// REF 2.4.15
func TestStreamAckOnDeliverySinkCannotAck(t *testing.T) {
	t.Parallel()
	sink := &recSink{}
	h := newHarness(t, streamConfig{}, authSpec("ui", sink))
	h.text("a")
	sink.waitN(t, 1)
	require.ErrorIs(t, h.s.ack("ui", 1), fault.Validation)
}

// Ack from inside OnDelta for the cursor being offered.
//
// REF 2.4.15
func TestStreamAckInsideOnDelta(t *testing.T) {
	t.Parallel()
	var h *harness
	errs := make(chan error, 8)
	sink := &recSink{fn: func(_ context.Context, env event.Envelope, d event.StreamDeltaPayload) error {
		c, err := DeliveryCursorFromEnvelope(env)
		if err == nil && d.Part != nil && d.Part.Text != "skip" {
			err = h.s.ack("ui", c)
		}
		errs <- err
		return nil
	}}
	h = newHarness(t, streamConfig{}, explicitSpec("ui", sink, 0))
	h.text("x")
	h.text("skip")
	h.text("y")
	sink.waitN(t, 3)
	for range 3 {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, "xskipy", prefixOf(t, h), "a cumulative ack covers the cursors below it")
}

// An explicit sink with more than MaxUnacked deliveries unacknowledged is
// detached with BudgetExceeded.
//
// REF 2.4.15
func TestStreamMaxUnacked(t *testing.T) {
	t.Parallel()
	var log detachLog
	sink := &recSink{}
	spec := explicitSpec("ui", sink, 2)
	spec.OnDetach = log.fn("ui")
	h := newHarness(t, streamConfig{}, spec)
	for _, s := range []string{"a", "b", "c", "d"} {
		h.text(s)
	}
	err := log.wait(t, "ui")
	require.ErrorIs(t, err, fault.BudgetExceeded)
	assert.ErrorContains(t, err, "more than max unacked 2")
	assert.Len(t, sink.all(), 3, "detached after the third delivery")
	assert.Empty(t, prefixOf(t, h))
	require.ErrorIs(t, h.s.ack("ui", 1), fault.Conflict, "the detach froze the prefix")
}

// REF 2.4.14
func TestCommitPrefix(t *testing.T) {
	t.Parallel()
	user := message.NewTextMessage(message.RoleUser, "hi")
	asst := func(s string) message.Message { return message.NewTextMessage(message.RoleAssistant, s) }
	result := func() *agent.Result {
		b := agent.NewBoard()
		b.Append(agent.MainChannel, user, asst("Hello "), asst("world"))
		return &agent.Result{Status: agent.StatusInterrupted, Output: []message.Message{asst("Hello "), asst("world")}, LastBoard: b}
	}
	t.Run("replaces trailing assistant messages", func(t *testing.T) {
		t.Parallel()
		res := result()
		require.NoError(t, commitPrefix(res, "Hello w"))
		assert.Equal(t, []message.Message{asst("Hello w")}, res.Output)
		assert.Equal(t, []message.Message{user, asst("Hello w")}, res.LastBoard.Channel(agent.MainChannel))
	})
	t.Run("empty prefix removes them", func(t *testing.T) {
		t.Parallel()
		res := result()
		require.NoError(t, commitPrefix(res, ""))
		assert.Empty(t, res.Output)
		assert.Equal(t, []message.Message{user}, res.LastBoard.Channel(agent.MainChannel))
	})
	t.Run("no board", func(t *testing.T) {
		t.Parallel()
		res := result()
		res.LastBoard = nil
		require.NoError(t, commitPrefix(res, "Hello"))
		assert.Equal(t, []message.Message{asst("Hello")}, res.Output)
	})
	errTests := []struct {
		name   string
		prefix string
		mutate func(*agent.Result)
		kind   *fault.Kind
	}{
		{"not a prefix", "Goodbye", nil, fault.Conflict},
		{"longer than the output", "Hello world!", nil, fault.Conflict},
		{"board differs", "Hello", func(r *agent.Result) {
			r.LastBoard.Channels[agent.MainChannel] = []message.Message{user, asst("Hi")}
		}, fault.Conflict},
		{"invalid utf-8 prefix", "Hel\xff", nil, fault.Validation},
		{"invalid utf-8 output", "Hel", func(r *agent.Result) { r.Output = []message.Message{asst("Hel\xff")} }, fault.Validation},
	}
	for _, tc := range errTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := result()
			if tc.mutate != nil {
				tc.mutate(res)
			}
			before := res.Output
			beforeMain := res.LastBoard.Channel(agent.MainChannel)
			require.ErrorIs(t, commitPrefix(res, tc.prefix), tc.kind)
			assert.Equal(t, before, res.Output, "unchanged on error")
			assert.Equal(t, beforeMain, res.LastBoard.Channel(agent.MainChannel), "unchanged on error")
		})
	}
	require.ErrorIs(t, commitPrefix(nil, ""), fault.Validation)
}
