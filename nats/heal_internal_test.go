package nats

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/nats/natstest"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/session"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// healTTL is long enough that no lease lapses while a test runs.
const healTTL = time.Minute

// heldClaim connects node to url and claims a key whose renewals are
// stopped, so that a test alone moves the lease; the claim believes it
// holds the lease for the whole test.
func heldClaim(t *testing.T, url, node string) (*Bus, *Claim) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b, err := Connect(ctx, Config{URL: url, Node: node, LeaseTTL: healTTL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	sc, err := b.Ownership().Acquire(ctx, session.Key{AgentID: "assistant", ContextID: "heal"})
	require.NoError(t, err)
	c := sc.(*Claim)
	c.once.Do(func() { close(c.stop); <-c.done }) // no renewals of its own
	return b, c
}

// putLease writes data as the lease's newest record, as a renewal or
// another node would, and returns its revision.
func putLease(t *testing.T, c *Claim, data []byte) uint64 {
	t.Helper()
	ack, err := c.o.b.js.PublishMsg(t.Context(), &natsgo.Msg{Subject: c.o.subject(c.k), Data: data}, jetstream.WithMsgTTL(healTTL))
	require.NoError(t, err)
	return ack.Sequence
}

// otherRecord is another node's lease record for c's key.
func otherRecord(c *Claim) []byte {
	rec, _ := json.Marshal(leaseRecord{Node: "other", AgentID: c.key.AgentID, ContextID: c.key.ContextID, Since: time.Now().UTC()})
	return rec
}

// heal calls c.heal as a refused renewal does.
func heal(t *testing.T, c *Claim) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept, err := c.heal(t.Context(), time.Now())
	require.NoError(t, err)
	return kept
}

// lease returns the lease's newest record and its revision.
func lease(t *testing.T, c *Claim) (uint64, []byte) {
	t.Helper()
	m, err := c.o.b.lastMsg(t.Context(), "KV_"+c.o.b.cfg.LeaseBucket, c.o.subject(c.k))
	require.NoError(t, err)
	require.NotNil(t, m)
	return m.seq, m.data
}

// REF 12.3.5.2: a renewal refused while the lease is still the claim's keeps the claim;
// a refusal because another node holds the lease loses it.
func TestClaimHeal(t *testing.T) {
	url := natstest.Run(t).URL()
	unackedAt := time.Now().Add(-time.Second)
	for _, tc := range []struct {
		name string
		// move changes the lease behind the claim's back
		move func(t *testing.T, c *Claim)
		kept bool
		// check runs when the claim is kept, with the revision it had
		check func(t *testing.T, c *Claim, before uint64)
	}{{
		name: "own record at the claim's revision",
		move: func(*testing.T, *Claim) {},
		kept: true,
		check: func(t *testing.T, c *Claim, before uint64) {
			assert.Equal(t, before, c.Token(), "the claim keeps its revision")
		},
	}, {
		name: "own record at a newer revision",
		move: func(t *testing.T, c *Claim) { putLease(t, c, c.value) },
		kept: true,
		check: func(t *testing.T, c *Claim, before uint64) {
			rev, _ := lease(t, c)
			assert.Greater(t, rev, before)
			assert.Equal(t, rev, c.Token(), "the claim takes the newer revision of its own record")
		},
	}, {
		name: "own record stored by a renewal that was not answered",
		move: func(t *testing.T, c *Claim) {
			c.mu.Lock()
			c.unacked = unackedAt // sent, never answered...
			c.mu.Unlock()
			putLease(t, c, c.value) // ... and stored
		},
		kept: true,
		check: func(t *testing.T, c *Claim, _ uint64) {
			c.mu.Lock()
			defer c.mu.Unlock()
			// the server counts that record's TTL from its receipt, which
			// the claim only knows is after its send: the claim's deadline
			// counts from the send, not from the renewal that found it
			assert.Equal(t, unackedAt.Add(healTTL), c.deadline)
			assert.True(t, c.unacked.IsZero(), "answered now")
		},
	}, {
		name: "delete marker within the deadline",
		move: func(t *testing.T, c *Claim) { require.NoError(t, c.o.kv.Delete(t.Context(), c.k)) },
		kept: true,
		check: func(t *testing.T, c *Claim, before uint64) {
			rev, data := lease(t, c)
			assert.Greater(t, rev, before+1, "written after the marker")
			assert.Equal(t, rev, c.Token())
			assert.Equal(t, string(c.value), string(data), "the claim's record is written again")
		},
	}, {
		name: "another node's record",
		move: func(t *testing.T, c *Claim) { putLease(t, c, otherRecord(c)) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := heldClaim(t, url, "a")
			before := c.Token()
			tc.move(t, c)
			require.Equal(t, tc.kept, heal(t, c))
			if tc.kept {
				tc.check(t, c, before)
			} else {
				assert.Equal(t, before, c.Token(), "a lost lease leaves the revision alone")
				_, data := lease(t, c)
				var rec leaseRecord
				require.NoError(t, json.Unmarshal(data, &rec))
				assert.Equal(t, "other", rec.Node, "the other node's record stays")
			}
			_ = c.o.kv.Purge(context.WithoutCancel(t.Context()), c.k)
		})
	}
}

// A fenced write refused because the lease's revision moved under the
// claim's own record is retried at the new revision and stored; once
// another node's record holds the lease, the write is refused and nothing
// is stored.
func TestStoreFencedWriteRetry(t *testing.T) {
	url := natstest.Run(t).URL()

	t.Run("renewal moved the revision", func(t *testing.T) {
		b, c := heldClaim(t, url, "a")
		before := c.Token()
		moved := putLease(t, c, c.value) // stored, the claim does not know it yet
		s := b.Checkpoints(checkpoint.Policy{})
		ctx := session.ContextWithClaim(t.Context(), c)
		seq, err := s.publish(ctx, "run-renewed", 1, 1, []byte("x"))
		require.NoError(t, err)
		assert.Greater(t, seq, moved)
		assert.Equal(t, moved, c.Token(), "written at the lease's new revision")
		assert.NotEqual(t, before, c.Token())
		require.NoError(t, c.Err())
		_ = c.o.kv.Purge(context.WithoutCancel(t.Context()), c.k)
	})

	t.Run("lease moved to another node", func(t *testing.T) {
		b, c := heldClaim(t, url, "a")
		putLease(t, c, otherRecord(c))
		s := b.Checkpoints(checkpoint.Policy{})
		ctx := session.ContextWithClaim(t.Context(), c)
		_, err := s.publish(ctx, "run-taken", 1, 1, []byte("x"))
		require.ErrorIs(t, err, fault.NotAvailable)
		m, err := b.lastMsg(t.Context(), "KV_"+b.cfg.LeaseBucket, s.entrySubject("run-taken", 1))
		require.NoError(t, err)
		assert.Nil(t, m, "the refused write was not stored")
		_ = c.o.kv.Purge(context.WithoutCancel(t.Context()), c.k)
	})
}

// REF 12.3.5.2: a refused renewal that cannot read the lease (the server
// does not answer in time) decides nothing: the claim is neither kept
// nor lost by it, and its next renewal or its deadline decides.
func TestClaimHealUndecided(t *testing.T) {
	_, c := heldClaim(t, natstest.Run(t).URL(), "a")
	before := c.Token()
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // no answer can come
	c.mu.Lock()
	kept, err := c.heal(ctx, time.Now())
	c.mu.Unlock()
	assert.False(t, kept)
	require.Error(t, err, "undecided, not lost")
	assert.Equal(t, before, c.Token())
	require.NoError(t, c.Err(), "the claim still holds")
}
