package nats

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/nats/natstest"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// raceKV is the lease bucket of a node whose first Create meets a race:
// before answering it, first does what happened on the server between
// Create's read and its write, and the answer is the server's refusal of
// a write at a sequence that moved.
type raceKV struct {
	jetstream.KeyValue
	first   func(ctx context.Context, key string, value []byte)
	creates int
}

func (kv *raceKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	kv.creates++
	if kv.creates == 1 {
		kv.first(ctx, key, value)
		return 0, &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence,
			Description: "wrong last sequence"}
	}
	return kv.KeyValue.Create(ctx, key, value, opts...)
}

// REF 12.3.5.1: Acquire whose Create is refused because the key changed
// under it looks at the key again: its own record (a first attempt stored
// but not acknowledged) is its claim, another node's record is that
// node's hold (refused at once, with no further write), and a delete
// marker or nothing is free (created again).
func TestAcquireWhenTheKeyChangedUnderCreate(t *testing.T) {
	srv := natstest.Run(t)
	key := session.Key{AgentID: "assistant", ContextID: "race"}
	other := func(kv jetstream.KeyValue, k string) {
		_, err := kv.Create(context.Background(), k, []byte(`{"node":"other","agent_id":"assistant","context_id":"race"}`))
		require.NoError(t, err)
	}
	for _, tc := range []struct {
		name    string
		first   func(kv jetstream.KeyValue, key string, value []byte)
		owner   string // "": the node claims the key
		creates int
	}{
		{"own write stored, its acknowledgement lost", func(kv jetstream.KeyValue, k string, v []byte) {
			_, err := kv.Create(context.Background(), k, v, jetstream.KeyTTL(time.Minute))
			require.NoError(t, err)
		}, "", 1},
		{"another node took the key", func(kv jetstream.KeyValue, k string, _ []byte) { other(kv, k) }, "other", 1},
		{"a lapsed lease's delete marker", func(kv jetstream.KeyValue, k string, _ []byte) {
			other(kv, k)
			require.NoError(t, kv.Delete(context.Background(), k))
		}, "", 2},
		{"nothing was written", func(jetstream.KeyValue, string, []byte) {}, "", 2},
	} {
		bucket := fmt.Sprintf("RACE%d", len(tc.name))
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			b, err := Connect(ctx, Config{URL: srv.URL(), Node: "a", LeaseTTL: time.Minute,
				LeaseBucket: bucket})
			require.NoError(t, err)
			defer b.Close()
			real := b.own.kv
			race := &raceKV{KeyValue: real, first: func(_ context.Context, k string, v []byte) { tc.first(real, k, v) }}
			b.own.kv = race

			sc, err := b.Ownership().Acquire(ctx, key)
			assert.Equal(t, tc.creates, race.creates, "Create calls")
			if tc.owner != "" {
				var owned *session.OwnedError
				require.True(t, errors.As(err, &owned), "want an OwnedError, got %v", err)
				assert.Equal(t, tc.owner, owned.Owner)
				assert.ErrorIs(t, err, fault.NotAvailable)
				return
			}
			require.NoError(t, err)
			defer sc.Release(context.Background())
			entry, err := real.Get(ctx, LeaseKey(key))
			require.NoError(t, err)
			assert.Equal(t, entry.Revision(), sc.Token(), "the claim is the lease's newest revision")
			assert.Contains(t, string(entry.Value()), `"node":"a"`)
		})
	}
}
