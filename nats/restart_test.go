package nats_test

import (
	"testing"

	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/event/eventtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 12.4.4: with storage: memory, a server that restarts comes back
// without the stream and the bucket; the nodes make them again when they
// find them missing, so that durable publishes, leases and checkpoints
// work again (what the lost stream held is gone).
func TestMemoryStorageAfterServerRestart(t *testing.T) {
	srv := server(t)
	mem := func(c *nats.Config) { c.Memory = true }
	a, b := connect(t, srv.URL(), "a", mem), connect(t, srv.URL(), "b", mem)
	onB := eventtest.Subscribe(t, b, "x.>")
	eventtest.Publish(t, a, "x.before", 1)
	eventtest.Receive(t, onB)

	srv.Restart()
	eventually(t, "both nodes reconnect", func() bool { return a.Conn().IsConnected() && b.Conn().IsConnected() })
	env, err := event.NewEnvelope(t.Context(), "x.after", 2)
	require.NoError(t, err)
	require.NoError(t, a.Publish(t.Context(), env), "the stream is made again")
	assert.Equal(t, "x.after", eventtest.Receive(t, onB).Subject)
	sub, err := b.SubscribeFrom(t.Context(), "x.>", 0, event.SubConfig{})
	require.NoError(t, err)
	defer sub.Close()
	assert.Equal(t, "x.after", eventtest.Receive(t, sub).Subject)

	s := a.Checkpoints(checkpoint.Policy{})
	require.NoError(t, s.Save(t.Context(), checkpointtest.NewCheckpoint("run-mem", 1)), "the bucket is made again")
	got, err := s.Load(t.Context(), "run-mem")
	require.NoError(t, err)
	assert.Equal(t, 1, got.Iteration)

	srv.Restart()
	eventually(t, "both nodes reconnect", func() bool { return a.Conn().IsConnected() && b.Conn().IsConnected() })
	c, err := b.Ownership().Acquire(t.Context(), sk)
	require.NoError(t, err, "the lease bucket is made again")
	require.NoError(t, c.Release(t.Context()))
}
