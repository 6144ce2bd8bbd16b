package nats

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/nats/natstest"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answerLost is a bucket whose Create is stored by the server but whose
// answer does not reach the caller: its ctx ended meanwhile.
type answerLost struct{ jetstream.KeyValue }

func (kv answerLost) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if _, err := kv.KeyValue.Create(ctx, key, value, opts...); err != nil {
		return 0, err
	}
	return 0, context.Canceled
}

// REF 12.3.9: an Acquire that fails after the server stored its lease (its
// ctx ended before the answer came: a client that went away) takes the
// lease back, instead of leaving the key held, with nothing renewing it,
// until its TTL passes — refusing every node's turns on it meanwhile,
// this node's own included.
func TestFailedAcquireLeavesNoLease(t *testing.T) {
	url := natstest.Run(t).URL()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b, err := Connect(ctx, Config{URL: url, Node: "a", LeaseTTL: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	key := session.Key{AgentID: "assistant", ContextID: "orphan"}
	o := b.Ownership()
	real := o.kv
	o.kv = answerLost{real}
	_, err = o.Acquire(ctx, key)
	require.ErrorIs(t, err, context.Canceled)

	o.kv = real
	_, err = o.kv.Get(ctx, LeaseKey(key))
	assert.True(t, errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted), "the lease stayed: %v", err)
	c, err := o.Acquire(ctx, key)
	require.NoError(t, err, "the key is free at once")
	require.NoError(t, c.Release(ctx))
}
