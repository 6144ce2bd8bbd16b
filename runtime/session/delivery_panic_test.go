package session_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A typed-nil sink counts as absent: it is refused by validation and by
// Start, before anything runs.
// REF 2.4
func TestSinkTypedNilRefused(t *testing.T) {
	t.Parallel()
	var typedNil *textSink
	spec := session.SinkSpec{ID: "x", Sink: typedNil}
	isKind(t, spec.Validate(), fault.Validation)
	isKind(t, session.ValidateSinks([]session.SinkSpec{spec}), fault.Validation)
	eng := agenttest.New(agenttest.Emit("x"))
	e := newEnv(t, eng)
	_, err := e.open(key("c")).Session().Start(context.Background(), ask("hi"), spec)
	isKind(t, err, fault.Validation)
	assert.Empty(t, eng.Runs(), "nothing ran")
}

// A panic in OnDelta detaches that sink with an Internal error naming it;
// the turn and the other sinks carry on.
// REF 2.4.4
func TestSinkPanicDetaches(t *testing.T) {
	t.Parallel()
	detached := make(chan error, 1)
	panicky := session.SinkSpec{
		ID: "panicky",
		Sink: agent.StreamSinkFunc(func(context.Context, event.Envelope, event.StreamDeltaPayload) error {
			panic("boom")
		}),
		OnDetach: func(err error) { detached <- err },
	}
	var other textSink
	e := newEnv(t, agenttest.New(agenttest.Emit("x"), agenttest.Reply("done")))
	tr, err := e.open(key("c")).Session().Start(context.Background(), ask("hi"),
		panicky, session.SinkSpec{ID: "other", Sink: &other})
	require.NoError(t, err)
	res := settle(t, tr)
	assert.Equal(t, agent.StatusCompleted, res.Status)
	var got error
	select {
	case got = <-detached:
	case <-time.After(patience):
		t.Fatal("OnDetach was not called")
	}
	isKind(t, got, fault.Internal)
	assert.Contains(t, got.Error(), `"panicky"`)
	assert.Contains(t, got.Error(), "boom")
	assert.False(t, errors.Is(got, context.Canceled))
	assert.Contains(t, other.text(), "x", "the other sink got the deltas")
}
