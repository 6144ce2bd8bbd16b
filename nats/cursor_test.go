package nats_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/nats/natstest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/event/eventtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publishN publishes durable events "<subject>" with payloads from..to-1,
// each retried with its own id while the servers are out of reach: the
// stream keeps one copy of an id, so a retry never duplicates.
func publishN(t *testing.T, b *nats.Bus, subject string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		env, err := event.NewEnvelope(t.Context(), subject, i)
		require.NoError(t, err)
		deadline := time.Now().Add(wait)
		for {
			err = b.Publish(t.Context(), env)
			if err == nil {
				break
			}
			require.ErrorIs(t, err, fault.NotAvailable)
			require.True(t, time.Now().Before(deadline), "publish %d: %v", i, err)
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// receiveN reads n envelopes and returns their payloads and cursors. It
// waits up to wait for each: after a server is lost, a cursor
// subscription resumes once the stream has a leader again and its
// consumer is made anew, which takes seconds on a busy machine.
func receiveN(t *testing.T, sub event.Subscription, n int) (vals []int, cursors []uint64) {
	t.Helper()
	for range n {
		var env event.Envelope
		select {
		case e, ok := <-sub.C():
			require.True(t, ok, "subscription %q closed", sub.Pattern())
			env = e
		case <-time.After(wait):
			require.FailNow(t, "no envelope", "subscription %q received nothing within %s", sub.Pattern(), wait)
		}
		var v int
		require.NoError(t, env.Decode(&v))
		c, ok := nats.Cursor(env)
		require.True(t, ok, "envelope %s has no cursor", env.ID)
		vals, cursors = append(vals, v), append(cursors, c)
	}
	return vals, cursors
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// REF 12.2.1, 12.2.2: a cursor subscription delivers the stored events in
// order with their cursors, survives the restart of its server with
// nothing lost or repeated, and a new subscription from a cursor starts
// right after it.
func TestCursorSurvivesServerRestart(t *testing.T) {
	srv := server(t)
	pub, reader := connect(t, srv.URL(), "pub"), connect(t, srv.URL(), "reader")
	sub, err := reader.SubscribeFrom(t.Context(), "orders.>", 0, event.SubConfig{BufferSize: 4})
	require.NoError(t, err)
	assert.Equal(t, "orders.>", sub.Pattern())

	publishN(t, pub, "orders.created", 0, 5)
	eventtest.Publish(t, pub, "other.created", nil) // another pattern: not delivered
	vals, cursors := receiveN(t, sub, 5)
	assert.Equal(t, seq(0, 5), vals)

	srv.Restart()
	publishN(t, pub, "orders.created", 5, 10)
	more, moreCursors := receiveN(t, sub, 5)
	assert.Equal(t, seq(5, 10), more, "after the restart the subscription resumes after its cursor")
	cursors = append(cursors, moreCursors...)
	for i := 1; i < len(cursors); i++ {
		assert.Greater(t, cursors[i], cursors[i-1])
	}
	require.NoError(t, pub.Conn().Flush())
	eventtest.AssertEmpty(t, sub)

	// a reader that kept cursor 7's value resumes right after it
	again, err := reader.SubscribeFrom(t.Context(), "orders.>", cursors[7], event.SubConfig{})
	require.NoError(t, err)
	rest, _ := receiveN(t, again, 2)
	assert.Equal(t, []int{8, 9}, rest)
	require.NoError(t, again.Close())
	require.NoError(t, again.Close())
	eventtest.AssertClosed(t, again)
}

// REF 12.2.3: a cursor subscription reads at its reader's pace: a full
// buffer drops nothing, the stream holds the rest.
func TestCursorNeverDrops(t *testing.T) {
	srv := server(t)
	b := connect(t, srv.URL(), "b")
	publishN(t, b, "slow.e", 0, 20)
	sub, err := b.SubscribeFrom(t.Context(), "slow.>", 0, event.SubConfig{BufferSize: 1, Backpressure: event.DropNewest})
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // let it fill its buffer
	vals, _ := receiveN(t, sub, 20)
	assert.Equal(t, seq(0, 20), vals)
}

// REF 12.2.4: ephemeral events (stream deltas) are not in the stream and
// never reach a cursor subscription; they do reach live subscriptions.
func TestCursorSkipsEphemeral(t *testing.T) {
	srv := server(t)
	pub, b := connect(t, srv.URL(), "pub"), connect(t, srv.URL(), "b")
	live := eventtest.SubscribeWithConfig(t, b, "agent.run.r1.>", event.SubConfig{BufferSize: 10})
	sub, err := b.SubscribeFrom(t.Context(), "agent.run.r1.>", 0, event.SubConfig{})
	require.NoError(t, err)
	eventtest.Publish(t, pub, event.SubjectStreamDelta("r1", "a"), "delta")
	eventtest.Publish(t, pub, event.SubjectRunEnd("r1"), "end")
	got := eventtest.Receive(t, sub)
	assert.Equal(t, event.SubjectRunEnd("r1"), got.Subject)
	assert.Equal(t, event.SubjectStreamDelta("r1", "a"), eventtest.Receive(t, live).Subject)
	assert.Equal(t, event.SubjectRunEnd("r1"), eventtest.Receive(t, live).Subject)
}

// REF 12.2.5: a cursor subscription closes with its ctx and with the bus;
// SubscribeFrom checks its pattern and refuses a closed bus.
func TestCursorLifecycle(t *testing.T) {
	srv := server(t)
	b := connect(t, srv.URL(), "b")
	_, err := b.SubscribeFrom(t.Context(), "a.>.b", 0, event.SubConfig{})
	assert.ErrorIs(t, err, event.ErrInvalidPattern)
	ctx, cancel := context.WithCancel(t.Context())
	byCtx, err := b.SubscribeFrom(ctx, "a.>", 0, event.SubConfig{})
	require.NoError(t, err)
	byBus, err := b.SubscribeFrom(t.Context(), "a.>", 0, event.SubConfig{})
	require.NoError(t, err)
	cancel()
	eventtest.AssertClosed(t, byCtx)
	require.NoError(t, b.Close())
	eventtest.AssertClosed(t, byBus)
	_, err = b.SubscribeFrom(t.Context(), "a.>", 0, event.SubConfig{})
	assert.True(t, errors.Is(err, event.ErrBusClosed))
}

// REF 12.2.1, 12.4.1: on a cluster of three servers, with the stream
// replicated on all three, a reader follows the events of another node
// across the shutdown of the server it is connected to, with nothing
// lost or repeated.
func TestClusterCursorFailover(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	urls := natstest.URLs(servers)
	replicated := func(c *nats.Config) { c.Replicas = 3 }
	pub, reader := connect(t, urls, "pub", replicated), connect(t, urls, "reader", replicated)
	live := eventtest.SubscribeWithConfig(t, reader, "jobs.>", event.SubConfig{BufferSize: 100})
	sub, err := reader.SubscribeFrom(t.Context(), "jobs.>", 0, event.SubConfig{})
	require.NoError(t, err)

	publishN(t, pub, "jobs.done", 0, 10)
	vals, _ := receiveN(t, sub, 10)
	assert.Equal(t, seq(0, 10), vals)
	liveVals, _ := receiveLive(t, live, 10)
	assert.Equal(t, seq(0, 10), liveVals, "live subscriptions see another node's events")

	connected := reader.Conn().ConnectedUrl()
	for _, s := range servers {
		if s.URL() == connected {
			s.Shutdown()
		}
	}
	publishN(t, pub, "jobs.done", 10, 20)
	vals, _ = receiveN(t, sub, 10)
	assert.Equal(t, seq(10, 20), vals, "the reader resumes on another server after its cursor")
	eventually(t, "reader reconnected", func() bool { return reader.Conn().IsConnected() })
	require.NoError(t, pub.Conn().Flush())
	eventtest.AssertEmpty(t, sub)
	t.Logf("reader moved from %s to %s", connected, reader.Conn().ConnectedUrl())
}

// receiveLive reads n envelopes of a live subscription.
func receiveLive(t *testing.T, sub event.Subscription, n int) ([]int, error) {
	t.Helper()
	var vals []int
	for range n {
		var v int
		require.NoError(t, eventtest.Receive(t, sub).Decode(&v))
		vals = append(vals, v)
	}
	return vals, nil
}

// REF 12.2.2, 12.4.1: on a cluster of three, a cursor subscription reads
// every event once while the stream's leader changes under it (no server
// goes away, no connection is lost), and so does a durable publish.
func TestCursorAcrossLeaderChanges(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	urls := natstest.URLs(servers)
	replicated := func(c *nats.Config) { c.Replicas = 3 }
	pub, reader := connect(t, urls, "pub", replicated), connect(t, urls, "reader", replicated)
	sub, err := reader.SubscribeFrom(t.Context(), "jobs.>", 0, event.SubConfig{})
	require.NoError(t, err)
	for round := range 3 {
		publishN(t, pub, "jobs.done", round*5, round*5+5)
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		_, err := pub.Conn().RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+nats.DefaultStream, nil)
		cancel()
		require.NoError(t, err)
	}
	publishN(t, pub, "jobs.done", 15, 20)
	vals, _ := receiveN(t, sub, 20)
	assert.Equal(t, seq(0, 20), vals)
	require.NoError(t, pub.Conn().Flush())
	eventtest.AssertEmpty(t, sub)
}
