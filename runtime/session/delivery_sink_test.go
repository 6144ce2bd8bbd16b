package session

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var nopSink = agent.StreamSinkFunc(func(context.Context, event.Envelope, event.StreamDeltaPayload) error { return nil })

func okSpec(id string) SinkSpec { return SinkSpec{ID: id, Sink: nopSink} }

// One case per row of the SinkSpec table of REF 2.4.
//
// REF 2.4
func TestSinkSpecValidate(t *testing.T) {
	t.Parallel()
	authoritative := func(s SinkSpec) SinkSpec {
		s.Visibility, s.Authority = VisibilityConfirmed, AuthorityAuthoritative
		return s
	}
	explicit := func(s SinkSpec) SinkSpec {
		s = authoritative(s)
		s.AckMode = AckExplicit
		return s
	}
	tests := []struct {
		name string
		spec SinkSpec
		want string // "" when valid; otherwise a part of the message
	}{
		{"ID: set", okSpec("console"), ""},
		{"ID: required", SinkSpec{Sink: nopSink}, "id is required"},
		{"Sink: required", SinkSpec{ID: "a"}, "sink is required"},
		{"QueueSize: zero", SinkSpec{ID: "a", Sink: nopSink, QueueSize: 0}, ""},
		{"QueueSize: positive", SinkSpec{ID: "a", Sink: nopSink, QueueSize: 8}, ""},
		{"QueueSize: negative", SinkSpec{ID: "a", Sink: nopSink, QueueSize: -1}, "queue size -1 is negative"},
		{"DeliveryTimeout: zero", SinkSpec{ID: "a", Sink: nopSink}, ""},
		{"DeliveryTimeout: positive", SinkSpec{ID: "a", Sink: nopSink, DeliveryTimeout: time.Second}, ""},
		{"DeliveryTimeout: negative", SinkSpec{ID: "a", Sink: nopSink, DeliveryTimeout: -time.Second}, "delivery timeout -1s is negative"},
		{"OnDetach: optional", SinkSpec{ID: "a", Sink: nopSink, OnDetach: func(error) {}}, ""},
		{"Visibility: raw", SinkSpec{ID: "a", Sink: nopSink, Visibility: VisibilityRaw}, ""},
		{"Visibility: confirmed", SinkSpec{ID: "a", Sink: nopSink, Visibility: VisibilityConfirmed}, ""},
		{"Visibility: unknown", SinkSpec{ID: "a", Sink: nopSink, Visibility: "Confirmed"}, `visibility "Confirmed"`},
		{"Authority: authoritative confirmed", authoritative(okSpec("a")), ""},
		{"Authority: authoritative raw", SinkSpec{ID: "a", Sink: nopSink, Authority: AuthorityAuthoritative}, "authoritative sink must be confirmed"},
		{"Authority: unknown", SinkSpec{ID: "a", Sink: nopSink, Authority: "owner"}, `authority "owner"`},
		{"AckMode: explicit authoritative", explicit(okSpec("a")), ""},
		{"AckMode: explicit observer", SinkSpec{ID: "a", Sink: nopSink, Visibility: VisibilityConfirmed, AckMode: AckExplicit}, "explicit ack requires"},
		{"AckMode: explicit raw", SinkSpec{ID: "a", Sink: nopSink, AckMode: AckExplicit}, "explicit ack requires"},
		{"AckMode: unknown", SinkSpec{ID: "a", Sink: nopSink, AckMode: "manual"}, `ack mode "manual"`},
		{"MaxUnacked: explicit", func() SinkSpec { s := explicit(okSpec("a")); s.MaxUnacked = 4; return s }(), ""},
		{"MaxUnacked: without explicit", func() SinkSpec { s := authoritative(okSpec("a")); s.MaxUnacked = 4; return s }(), "max unacked requires explicit ack"},
		{"MaxUnacked: negative", func() SinkSpec { s := explicit(okSpec("a")); s.MaxUnacked = -1; return s }(), "max unacked -1 is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.spec.Validate()
			errSet := ValidateSinks([]SinkSpec{tc.spec})
			if tc.want == "" {
				require.NoError(t, err)
				require.NoError(t, errSet)
				return
			}
			require.ErrorIs(t, err, fault.Validation)
			assert.ErrorContains(t, err, tc.want)
			require.ErrorIs(t, errSet, fault.Validation)
			assert.ErrorContains(t, errSet, "sinks[0]")
		})
	}
}

// REF 2.4
func TestValidateSinksSet(t *testing.T) {
	t.Parallel()
	auth := func(id string) SinkSpec {
		return SinkSpec{ID: id, Sink: nopSink, Visibility: VisibilityConfirmed, Authority: AuthorityAuthoritative}
	}
	tests := []struct {
		name  string
		specs []SinkSpec
		want  string
	}{
		{"none", nil, ""},
		{"distinct ids", []SinkSpec{okSpec("a"), okSpec("b")}, ""},
		{"duplicate id", []SinkSpec{okSpec("a"), okSpec("b"), okSpec("a")}, `sinks[0] and sinks[2] share the id "a"`},
		{"one authoritative", []SinkSpec{okSpec("a"), auth("b")}, ""},
		{"two authoritative", []SinkSpec{auth("a"), okSpec("b"), auth("c")}, "sinks[0] and sinks[2] are both authoritative"},
		{"bad member named by index", []SinkSpec{okSpec("a"), {Sink: nopSink}}, "sinks[1]: id is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateSinks(tc.specs)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, fault.Validation)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// startStream validates the set before it subscribes.
//
// REF 2.4
func TestStartStreamValidates(t *testing.T) {
	t.Parallel()
	bus := event.NewMemoryBus()
	t.Cleanup(func() { _ = bus.Close() })
	cfg := streamConfig{runID: testRun}
	tests := map[string]func() (*stream, error){
		"nil ctx":  func() (*stream, error) { return startStream(nil, bus, cfg, nil) },
		"nil bus":  func() (*stream, error) { return startStream(t.Context(), nil, cfg, nil) },
		"no run":   func() (*stream, error) { return startStream(t.Context(), bus, streamConfig{}, nil) },
		"bad sink": func() (*stream, error) { return startStream(t.Context(), bus, cfg, []SinkSpec{{ID: "a"}}) },
		"dup sink": func() (*stream, error) {
			return startStream(t.Context(), bus, cfg, []SinkSpec{okSpec("a"), okSpec("a")})
		},
	}
	for name, start := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := start()
			require.ErrorIs(t, err, fault.Validation)
			assert.Nil(t, s)
		})
	}
	assert.Zero(t, bus.Subscriptions(), "a refused stream subscribes to nothing")
}

// REF 2.4.8
func TestDeliveryCursorFromEnvelope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		headers map[string]string
		want    uint64
		ok      bool
	}{
		{"one", map[string]string{event.HeaderDeliveryCursor: "1"}, 1, true},
		{"large", map[string]string{event.HeaderDeliveryCursor: "18446744073709551615"}, 1<<64 - 1, true},
		{"missing", nil, 0, false},
		{"empty", map[string]string{event.HeaderDeliveryCursor: ""}, 0, false},
		{"zero", map[string]string{event.HeaderDeliveryCursor: "0"}, 0, false},
		{"negative", map[string]string{event.HeaderDeliveryCursor: "-1"}, 0, false},
		{"not a number", map[string]string{event.HeaderDeliveryCursor: "x"}, 0, false},
		{"overflow", map[string]string{event.HeaderDeliveryCursor: "18446744073709551616"}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DeliveryCursorFromEnvelope(event.Envelope{Subject: "agent.run.r.end", Headers: tc.headers})
			if !tc.ok {
				require.ErrorIs(t, err, fault.Validation)
				assert.Zero(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// REF 2.4.2
func TestErrSinkQueueFullKind(t *testing.T) {
	t.Parallel()
	assert.ErrorIs(t, ErrSinkQueueFull, fault.BudgetExceeded)
	wrapped := fmt.Errorf("x: %w", ErrSinkQueueFull)
	assert.ErrorIs(t, wrapped, ErrSinkQueueFull)
}

// REF 2.4.12: the stream finds an engine's agent.RunEndPublishError
// anywhere in the run's error chain.
func TestRunEndPublishErrorDetected(t *testing.T) {
	t.Parallel()
	rep := &agent.RunEndPublishError{RunID: "run-1", Err: errors.New("bus closed")}
	joined := errors.Join(errors.New("engine failed"), rep)
	got, ok := runEndPublishError(joined)
	require.True(t, ok)
	assert.Equal(t, "run-1", got.RunID)
	assert.ErrorIs(t, joined, fault.Internal)
	_, ok = runEndPublishError(errors.New("other"))
	assert.False(t, ok)
}

// REF 2.4.16
func TestStreamPolicyContext(t *testing.T) {
	t.Parallel()
	_, ok := StreamPolicyFromContext(context.Background())
	assert.False(t, ok)
	_, ok = StreamPolicyFromContext(nil) // a nil ctx carries nothing
	assert.False(t, ok)

	sinks := []SinkSpec{okSpec("a"), okSpec("b")}
	ctx := ContextWithStreamPolicy(context.Background(), StreamPolicy{Sinks: sinks, Inheritable: true})
	sinks[0].ID = "changed"
	got, ok := StreamPolicyFromContext(ctx)
	require.True(t, ok)
	assert.True(t, got.Inheritable)
	require.Len(t, got.Sinks, 2)
	assert.Equal(t, "a", got.Sinks[0].ID, "the ctx keeps its own copy")
	got.Sinks[1].ID = "mine"
	again, _ := StreamPolicyFromContext(ctx)
	assert.Equal(t, "b", again.Sinks[1].ID, "each reader gets its own slice")

	boundary := ContextWithStreamPolicy(ctx, StreamPolicy{Sinks: again.Sinks})
	inner, ok := StreamPolicyFromContext(boundary)
	require.True(t, ok)
	assert.False(t, inner.Inheritable, "a boundary overrides the policy")
	assert.Nil(t, inner.Inherited())
}

// Inherited sinks are observers: no authority, no explicit ack, no window.
//
// REF 2.4.16
func TestStreamPolicyInherited(t *testing.T) {
	t.Parallel()
	detached := 0
	auth := SinkSpec{ID: "ui", Sink: nopSink, QueueSize: 9, DeliveryTimeout: time.Second, OnDetach: func(error) { detached++ },
		Visibility: VisibilityConfirmed, Authority: AuthorityAuthoritative, AckMode: AckExplicit, MaxUnacked: 3}
	raw := okSpec("log")
	p := StreamPolicy{Sinks: []SinkSpec{auth, raw}, Inheritable: true}
	got := p.Inherited()
	require.Len(t, got, 2)
	ui := got[0]
	assert.Equal(t, AuthorityObserver, ui.Authority)
	assert.Equal(t, AckOnDelivery, ui.AckMode)
	assert.Zero(t, ui.MaxUnacked)
	assert.Equal(t, VisibilityConfirmed, ui.Visibility, "visibility is kept")
	assert.Equal(t, 9, ui.QueueSize)
	assert.Equal(t, time.Second, ui.DeliveryTimeout)
	ui.OnDetach(nil)
	assert.Equal(t, 1, detached, "OnDetach is kept")
	assert.Equal(t, raw.ID, got[1].ID)
	require.NoError(t, ValidateSinks(got))
	assert.Equal(t, AuthorityAuthoritative, p.Sinks[0].Authority, "the policy's own sinks are unchanged")

	assert.Nil(t, StreamPolicy{Sinks: p.Sinks}.Inherited(), "not inheritable")
	assert.Nil(t, StreamPolicy{Inheritable: true}.Inherited(), "no sinks")
}
