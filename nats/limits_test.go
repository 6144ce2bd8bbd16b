package nats_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/event/eventtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// overPayload is more than the server's default max_payload (1 MiB).
const overPayload = 1<<20 + 1

// REF 12.1.10: an event larger than the server's max_payload is refused
// at once as Validation, durable or ephemeral, naming the subject and the
// limit; it is not asked again as if the server were away. It still
// reached this node's subscriptions, and the bus carries on.
func TestOversizeEventRefused(t *testing.T) {
	srv := server(t)
	a, b := connect(t, srv.URL(), "a"), connect(t, srv.URL(), "b")
	onB := eventtest.Subscribe(t, b, "agent.run.big.>")
	big := strings.Repeat("x", overPayload)
	for _, subject := range []string{event.SubjectRunStart("big"), event.SubjectStreamDelta("big", "n1")} {
		t.Run(subject, func(t *testing.T) {
			local := eventtest.Subscribe(t, a, subject)
			env, err := event.NewEnvelope(t.Context(), subject, big)
			require.NoError(t, err)
			err = a.Publish(t.Context(), env)
			require.ErrorIs(t, err, fault.Validation)
			assert.NotErrorIs(t, err, fault.NotAvailable, "the server is there: asking again cannot help")
			assert.Contains(t, err.Error(), subject)
			assert.Contains(t, err.Error(), "max_payload")
			assert.Equal(t, subject, eventtest.Receive(t, local).Subject, "the local delivery happened")
		})
	}
	eventtest.Publish(t, a, event.SubjectRunEnd("big"), "small")
	assert.Equal(t, event.SubjectRunEnd("big"), eventtest.Receive(t, onB).Subject, "only the small event crossed")
}

// REF 12.6.5: a checkpoint whose entry does not fit in one NATS message
// is refused as Validation naming the exec id and the limit, and the
// record saved before it stays.
func TestOversizeCheckpointRefused(t *testing.T) {
	s := connect(t, server(t).URL(), "a").Checkpoints(checkpoint.Policy{})
	require.NoError(t, s.Save(t.Context(), checkpointtest.NewCheckpoint("run-big", 1)))
	cp := checkpointtest.NewCheckpoint("run-big", 2)
	cp.Board.Vars["text"] = strings.Repeat("x", overPayload)
	err := s.Save(t.Context(), cp)
	require.ErrorIs(t, err, fault.Validation)
	assert.NotErrorIs(t, err, fault.NotAvailable)
	assert.Contains(t, err.Error(), "run-big")
	assert.Contains(t, err.Error(), "max_payload")
	got, err := s.Load(t.Context(), "run-big")
	require.NoError(t, err)
	assert.Equal(t, 1, got.Iteration)
	var ce *checkpoint.CorruptError
	assert.False(t, errors.As(err, &ce))
}

var _ = nats.MaxDeltas
