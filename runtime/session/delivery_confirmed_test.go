package session

import (
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Speculative deltas wait for their branch's terminal: released in order
// after accept, dropped on cancel, and the control delta itself is
// forwarded. Every confirmed emission carries the turn's next cursor.
//
// REF 2.4.8
func TestConfirmedStreamReleasesAcceptedBranches(t *testing.T) {
	t.Parallel()
	raw, c1, c2 := &recSink{}, &recSink{}, &recSink{}
	h := newHarness(t, streamConfig{}, SinkSpec{ID: "raw", Sink: raw},
		SinkSpec{ID: "c1", Sink: c1, Visibility: VisibilityConfirmed},
		SinkSpec{ID: "c2", Sink: c2, Visibility: VisibilityConfirmed})
	h.text("before")
	h.spec("f", "b1", "b1-1")
	h.spec("f", "b2", "b2-1")
	h.spec("f", "b1", "b1-2")
	h.step("n2")
	h.cancel("f", "b2")
	h.spec("f", "b1", "b1-3")
	h.accept("f", "b1")
	h.accept("f", "b1") // a repeated terminal is ignored
	h.text("after")
	h.runEnd()
	require.NoError(t, h.finalize(1))

	assert.Equal(t, []string{"before", "b1-1", "b2-1", "b1-2", "start", "cancel:f/b2", "b1-3",
		"accept:f/b1", "accept:f/b1", "after", "end"}, labels(raw.all()), "raw sinks see everything at once")
	want := []string{"before", "start", "cancel:f/b2", "accept:f/b1", "b1-1", "b1-2", "b1-3", "after", "end"}
	for _, s := range []*recSink{c1, c2} {
		got := s.all()
		assert.Equal(t, want, labels(got))
		assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}, cursors(t, got), "cursors start at 1 and grow by 1")
	}
	for i, d := range c1.all() {
		assert.Equal(t, d.env.Header(event.HeaderDeliveryCursor), c2.all()[i].env.Header(event.HeaderDeliveryCursor),
			"every confirmed sink sees the same cursor")
	}
}

// Cursors are shared across the attempts of a turn, and branch states are
// per attempt.
//
// REF 2.4.8
// REF 2.4.11
func TestConfirmedStreamCursorAcrossAttempts(t *testing.T) {
	t.Parallel()
	c := &recSink{}
	h := newHarness(t, streamConfig{}, SinkSpec{ID: "c", Sink: c, Visibility: VisibilityConfirmed})
	h.spec("f", "b", "one")
	h.accept("f", "b")
	h.runEnd()
	h.spec("f", "b", "two") // same ids, new attempt: a fresh branch
	h.accept("f", "b")
	h.runEnd()
	require.NoError(t, h.finalize(2))
	got := c.all()
	assert.Equal(t, []string{"accept:f/b", "one", "accept:f/b", "two", "end"}, labels(got))
	assert.Equal(t, []uint64{1, 2, 3, 4, 5}, cursors(t, got))
}

// Each speculative buffer limit, when exceeded, detaches every confirmed
// sink with BudgetExceeded; the confirmed stream stays dead and raw sinks
// carry on.
//
// REF 2.4.9
func TestConfirmedStreamSpeculativeLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   streamConfig
		feed  func(h *harness)
		limit string
	}{
		{"events", streamConfig{speculativeEvents: 2}, func(h *harness) {
			h.spec("f", "b", "1")
			h.spec("f", "b", "2")
			h.spec("f", "b", "3")
		}, "held speculative deltas"},
		{"bytes", streamConfig{speculativeBytes: 120}, func(h *harness) {
			h.spec("f", "b", strings.Repeat("x", 30))
			h.spec("f", "b", strings.Repeat("y", 30))
		}, "bytes of held speculative deltas"},
		{"branch states", streamConfig{speculativeEvents: 2}, func(h *harness) {
			h.cancel("f", "b1")
			h.spec("f", "b2", "1")
			h.cancel("f", "b3")
		}, "speculative branch states"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw, c1, c2 := &recSink{}, &recSink{}, &recSink{}
			var log detachLog
			h := newHarness(t, tc.cfg, SinkSpec{ID: "raw", Sink: raw, OnDetach: log.fn("raw")},
				SinkSpec{ID: "c1", Sink: c1, Visibility: VisibilityConfirmed, OnDetach: log.fn("c1")},
				SinkSpec{ID: "c2", Sink: c2, Visibility: VisibilityConfirmed, OnDetach: log.fn("c2")})
			h.text("ok")
			tc.feed(h)
			for _, id := range []string{"c1", "c2"} {
				err := log.wait(t, id)
				require.ErrorIs(t, err, fault.BudgetExceeded, id)
				assert.ErrorContains(t, err, tc.limit)
			}
			h.text("later")
			h.runEnd()
			require.NoError(t, h.finalize(1))
			assert.NoError(t, log.wait(t, "raw"), "the raw sink completes normally")
			rawLabels := labels(raw.all())
			assert.Equal(t, "later", rawLabels[len(rawLabels)-2])
			assert.Equal(t, "end", rawLabels[len(rawLabels)-1])
			assert.NotContains(t, labels(c1.all()), "later", "the confirmed stream stays dead")
			assert.True(t, h.s.cs.dead())
		})
	}
}

// Protocol violations fail the confirmed stream the same way.
//
// REF 2.4.10
func TestConfirmedStreamProtocolViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		feed func(h *harness)
		kind *fault.Kind
		msg  string
	}{
		{"speculative without fork", func(h *harness) { h.spec("", "b", "x") }, fault.Validation, "no fork_id or branch_id"},
		{"speculative without branch", func(h *harness) { h.spec("f", "", "x") }, fault.Validation, "no fork_id or branch_id"},
		{"control without ids", func(h *harness) { h.accept("", "") }, fault.Validation, "no fork_id or branch_id"},
		{"data after terminal", func(h *harness) {
			h.spec("f", "b", "x")
			h.accept("f", "b")
			h.spec("f", "b", "late")
		}, fault.Conflict, "after parallel_branch_accept"},
		{"two terminals", func(h *harness) {
			h.accept("f", "b")
			h.cancel("f", "b")
		}, fault.Conflict, "parallel_branch_cancel after parallel_branch_accept"},
		{"attempt ends with an open branch", func(h *harness) {
			h.spec("f", "b", "x")
			h.runEnd()
		}, fault.Conflict, "had no accept or cancel"},
		{"undecodable delta", func(h *harness) {
			h.publish(event.SubjectStreamDelta(h.run, "x"), []byte(`{"type":1}`))
		}, fault.Validation, "decode envelope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw, conf := &recSink{}, &recSink{}
			var log detachLog
			h := newHarness(t, streamConfig{}, SinkSpec{ID: "raw", Sink: raw},
				SinkSpec{ID: "conf", Sink: conf, Visibility: VisibilityConfirmed, OnDetach: log.fn("conf")})
			tc.feed(h)
			err := log.wait(t, "conf")
			require.ErrorIs(t, err, tc.kind)
			assert.ErrorContains(t, err, tc.msg)
			h.text("raw goes on")
			h.runEnd()
			attempts := 1
			if strings.HasPrefix(tc.name, "attempt ends") {
				attempts = 2
			}
			require.NoError(t, h.finalize(attempts))
			assert.Contains(t, labels(raw.all()), "raw goes on")
			assert.NotContains(t, labels(conf.all()), "end")
		})
	}
}

// The state machine on its own: counters follow what is held.
//
// REF 2.4.9
func TestConfirmedStreamCounters(t *testing.T) {
	t.Parallel()
	c := newConfirmedStream(10, 1000)
	var out []string
	emit := func(env event.Envelope, d event.StreamDeltaPayload, cursor uint64) {
		out = append(out, label(delivery{env, d}))
	}
	env := func(d event.StreamDeltaPayload) event.Envelope {
		return event.Envelope{Subject: "agent.run.r.stream.a.delta", Payload: []byte(`{"n":12345}`)}
	}
	for _, d := range []event.StreamDeltaPayload{specDelta("f", "a", "1"), specDelta("f", "a", "2"), specDelta("f", "b", "3")} {
		require.NoError(t, c.offer(env(d), d, emit))
	}
	assert.Equal(t, 3, c.pending)
	assert.Equal(t, 33, c.pendingBytes)
	require.NoError(t, c.offer(env(event.StreamDeltaPayload{}), control(event.DeltaParallelBranchAccept, "f", "a"), emit))
	assert.Equal(t, 1, c.pending)
	assert.Equal(t, 11, c.pendingBytes)
	require.NoError(t, c.offer(env(event.StreamDeltaPayload{}), control(event.DeltaParallelBranchCancel, "f", "b"), emit))
	assert.Zero(t, c.pending)
	assert.Zero(t, c.pendingBytes)
	require.NoError(t, c.endAttempt())
	assert.Empty(t, c.branches)
	assert.Equal(t, []string{"accept:f/a", "1", "2", "cancel:f/b"}, out)
	assert.EqualValues(t, 4, c.cursor)
}
