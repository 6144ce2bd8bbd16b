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
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var sk = session.Key{AgentID: "assistant", ContextID: "c1"}

// acquire claims key on b and requires success.
func acquire(t *testing.T, b *nats.Bus, key session.Key) *nats.Claim {
	t.Helper()
	c, err := b.Ownership().Acquire(t.Context(), key)
	require.NoError(t, err)
	return c.(*nats.Claim)
}

// takeOver polls Acquire on b until it succeeds and returns the claim and
// how long it took.
func takeOver(t *testing.T, b *nats.Bus, key session.Key) (*nats.Claim, time.Duration) {
	t.Helper()
	start := time.Now()
	var c session.Claim
	eventually(t, "take the key over", func() bool {
		var err error
		c, err = b.Ownership().Acquire(t.Context(), key)
		if err != nil {
			require.ErrorIs(t, err, fault.NotAvailable)
		}
		return err == nil
	})
	return c.(*nats.Claim), time.Since(start)
}

// refusedBy asserts that b cannot claim key because owner holds it.
func refusedBy(t *testing.T, b *nats.Bus, key session.Key, owner, address string) {
	t.Helper()
	_, err := b.Ownership().Acquire(t.Context(), key)
	var owned *session.OwnedError
	require.True(t, errors.As(err, &owned), "want an OwnedError, got %v", err)
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.Equal(t, owner, owned.Owner)
	assert.Equal(t, address, owned.Address)
}

// REF 12.3.5, 12.3.6, 12.4.1: on a three-server cluster one node holds a
// key while it renews its lease, the other is refused, naming the owner;
// once the holder stops renewing (its connection closes) the other takes
// the key over, and the holder's claim is lost.
func TestLeaseTakeoverOnCluster(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	urls := natstest.URLs(servers)
	opts := func(c *nats.Config) { c.Replicas, c.Advertise = 3, "http://"+c.Node+":8080" }
	a, b := connect(t, urls, "a", opts), connect(t, urls, "b", opts)

	ca := acquire(t, a, sk)
	assert.Equal(t, "a", ca.Owner())
	first := ca.Token()
	refusedBy(t, b, sk, "a", "http://a:8080")
	// the lease outlives its TTL while it is renewed
	eventually(t, "two renewals", func() bool { return ca.Token() > first+1 })
	require.NoError(t, ca.Err())
	refusedBy(t, b, sk, "a", "http://a:8080")

	a.Conn().Close() // a stops renewing, as a dead node does
	cb, took := takeOver(t, b, sk)
	t.Logf("takeover after %s (lease ttl %s)", took, leaseTTL)
	assert.Greater(t, cb.Token(), ca.Token(), "the new owner's token is larger")
	select {
	case <-ca.Lost():
	case <-time.After(wait):
		t.Fatal("the old holder's claim was never lost")
	}
	assert.ErrorIs(t, ca.Err(), fault.NotAvailable)
	refusedBy(t, connect(t, urls, "c", opts), sk, "b", "http://b:8080")
}

// REF 12.3.6: Release deletes the lease, so another node claims the key at
// once; a released claim is not an error, and Release is idempotent.
func TestLeaseRelease(t *testing.T) {
	srv := server(t)
	short := func(c *nats.Config) { c.LeaseTTL = time.Second }
	a, b := connect(t, srv.URL(), "a", short), connect(t, srv.URL(), "b", short)
	ca := acquire(t, a, sk)
	require.NoError(t, ca.Release(t.Context()))
	require.NoError(t, ca.Release(t.Context()))
	<-ca.Lost()
	assert.NoError(t, ca.Err())
	cb := acquire(t, b, sk)
	_, err := a.Ownership().PutFenced(t.Context(), ca, "rec.x", []byte("late"))
	assert.ErrorIs(t, err, fault.NotAvailable, "a released claim fences its writes")
	_, err = b.Ownership().PutFenced(t.Context(), cb, "rec.x", []byte("now"))
	assert.NoError(t, err)
	time.Sleep(1500 * time.Millisecond) // past the lease TTL: a released claim stays released
	assert.NoError(t, ca.Err())
	// closing the bus ends what its node holds as lost, and frees the key
	require.NoError(t, b.Close())
	<-cb.Lost()
	assert.ErrorIs(t, cb.Err(), fault.NotAvailable, "a turn still running on it is stopped")
	acquire(t, a, sk)
}

// REF 12.3.7, 12.4.2: a node cut off from NATS loses its claim within its
// lease TTL, before another node can take the key; once the partition
// heals, a write at the revision it last knew is refused by the server.
func TestPartitionedNodeIsFenced(t *testing.T) {
	srv := server(t)
	proxy := natstest.NewProxy(t, srv.URL())
	a, b := connect(t, proxy.URL(), "a"), connect(t, srv.URL(), "b")
	ca := acquire(t, a, sk)
	rev, err := a.Ownership().PutFenced(t.Context(), ca, "rec.c1", []byte("1"))
	require.NoError(t, err)
	assert.Positive(t, rev)

	cutAt := time.Now()
	proxy.Cut()
	cb, took := takeOver(t, b, sk)
	t.Logf("cut off for %s before the takeover (lease ttl %s)", took, leaseTTL)
	// the holder gave up no later than the server let the lease lapse:
	// Err reads the claim's deadline, Lost follows on its own goroutine
	require.ErrorIs(t, ca.Err(), fault.NotAvailable, "the partitioned node still held its claim when another node took the key")
	select {
	case <-ca.Lost():
	case <-time.After(wait):
		t.Fatal("the lost claim's channel never closed")
	}
	_, err = a.Ownership().PutFenced(t.Context(), ca, "rec.c1", []byte("2"))
	assert.ErrorIs(t, err, fault.NotAvailable, "the node refuses its own write")

	proxy.Heal()
	eventually(t, "the partitioned node reconnects", func() bool { return a.Conn().IsConnected() })
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	_, err = nats.PutAtClaimRevision(ctx, a.Ownership(), ca, "rec.c1", []byte("stale"))
	assert.ErrorIs(t, err, fault.NotAvailable, "the server refuses a write at the old revision")
	_, err = b.Ownership().PutFenced(t.Context(), cb, "rec.c1", []byte("3"))
	assert.NoError(t, err)
	t.Logf("partition lasted %s", time.Since(cutAt))
}

// REF 12.3.11: PutFenced refuses a key that is not a key-value key of its
// own — another session's lease, a checkpoint entry's subject, a key with
// wildcards, spaces or an empty token — as Validation, writing nothing:
// one session's claim cannot overwrite another session's lease.
func TestPutFencedRefusesForeignKeys(t *testing.T) {
	srv := server(t)
	a, b := connect(t, srv.URL(), "a"), connect(t, srv.URL(), "b")
	other := session.Key{AgentID: "assistant", ContextID: "c2"}
	cb := acquire(t, b, other)
	ca := acquire(t, a, sk)
	for _, key := range []string{
		nats.LeaseKey(other), "cp.cnVuLXg.1", "", "a b", "a.*", "a.>", "a..b", ".a", "a.", "\u00e9",
	} {
		_, err := a.Ownership().PutFenced(t.Context(), ca, key, []byte("x"))
		assert.ErrorIs(t, err, fault.Validation, "key %q", key)
	}
	_, err := a.Ownership().PutFenced(t.Context(), ca, "rec.c1-ok_/=", []byte("x"))
	require.NoError(t, err)
	first := cb.Token()
	eventually(t, "b renews its lease, or loses it", func() bool { return cb.Token() > first || cb.Err() != nil })
	require.NoError(t, cb.Err(), "b still holds its key")
}

// REF 12.3.10: an event published under a claim that is lost (a node that
// stalled past its lease, whose turn is about to be stopped) reaches the
// node's own subscriptions but not the other nodes nor the stream: the
// node that took the key over, and the clients that follow the session
// from the stream, never see what the stalled turn did after its lease.
// Publish says so (NotAvailable).
func TestLostClaimPublishesNothingAcross(t *testing.T) {
	srv := server(t)
	short := func(c *nats.Config) { c.LeaseTTL = time.Second }
	a, b := connect(t, srv.URL(), "a", short), connect(t, srv.URL(), "b", short)
	onA, onB := eventtest.Subscribe(t, a, "agent.run.r1.>"), eventtest.Subscribe(t, b, "agent.run.r1.>")
	cursor, err := b.SubscribeFrom(t.Context(), "agent.run.r1.>", 0, event.SubConfig{})
	require.NoError(t, err)
	defer cursor.Close()
	ca := acquire(t, a, sk)
	held := session.ContextWithClaim(t.Context(), ca)
	publish := func(ctx context.Context, subject string) error {
		env, err := event.NewEnvelope(ctx, subject, nil)
		require.NoError(t, err)
		return a.Publish(ctx, env)
	}
	require.NoError(t, publish(held, "agent.run.r1.step.one"))

	nats.Abandon(ca) // a stalls: nothing renews its lease
	eventually(t, "a's claim is lost", func() bool { return ca.Err() != nil })
	err = publish(held, "agent.run.r1.step.two")
	require.ErrorIs(t, err, fault.NotAvailable)
	require.NoError(t, publish(t.Context(), "agent.run.r1.end"))

	for _, want := range []string{"agent.run.r1.step.one", "agent.run.r1.step.two", "agent.run.r1.end"} {
		assert.Equal(t, want, eventtest.Receive(t, onA).Subject, "the node's own subscriptions get everything")
	}
	for _, sub := range []event.Subscription{onB, cursor} {
		assert.Equal(t, "agent.run.r1.step.one", eventtest.Receive(t, sub).Subject)
		assert.Equal(t, "agent.run.r1.end", eventtest.Receive(t, sub).Subject, "nothing of the lost claim's crossed")
	}
}
