package nats_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/nats/natstest"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freshStores returns a function that returns the store of one bus on
// url, emptied first.
func freshStores(t *testing.T, url string, replicas int) func(t *testing.T) agent.CheckpointStore {
	b := connect(t, url, "a", func(c *nats.Config) { c.Replicas = replicas })
	return func(t *testing.T) agent.CheckpointStore {
		s := b.Checkpoints(checkpoint.Policy{})
		require.NoError(t, nats.PurgeAll(t.Context(), s))
		return s
	}
}

// The store on JetStream keeps the checkpoint store contract, deltas
// included, on one server. Torn tails cannot happen: a message is stored
// whole or not at all, so the suite's "torn tail" case is skipped.
func TestStoreConformance(t *testing.T) {
	url := server(t).URL()
	checkpointtest.Run(t, freshStores(t, url, 1))
}

// The same on a cluster of three servers, every bucket replicated on all
// three.
func TestStoreConformanceOnCluster(t *testing.T) {
	url := natstest.URLs(natstest.Cluster(t, 3))
	checkpointtest.Run(t, freshStores(t, url, 3))
}

// A store on another node, sharing the bucket, reads what one node saved:
// snapshots and deltas, and a deletion.
func TestStoreSharedByNodes(t *testing.T) {
	url := server(t).URL()
	a := connect(t, url, "a").Checkpoints(checkpoint.Policy{})
	b := connect(t, url, "b").Checkpoints(checkpoint.Policy{})
	ctx := t.Context()
	w := checkpointtest.NewWriter(a, checkpointtest.NewCheckpoint("run-shared", 1), 9)
	require.NoError(t, w.Save(ctx))
	for i := range 5 {
		w.Set("count", float64(i))
		require.NoError(t, w.Save(ctx))
	}
	got, err := b.Load(ctx, "run-shared")
	require.NoError(t, err)
	want := w.CP.Clone()
	want.Changes = nil
	assert.Equal(t, want, *got)

	// b saves after a (a node that took the run over): its snapshot wins,
	// and a's next delta, whose base b never saw, does not corrupt it.
	later := checkpointtest.NewCheckpoint("run-shared", 7)
	require.NoError(t, b.Save(ctx, later))
	got, err = a.Load(ctx, "run-shared")
	require.NoError(t, err)
	assert.Equal(t, later, *got)

	require.NoError(t, a.Delete(ctx, "run-shared"))
	got, err = b.Load(ctx, "run-shared")
	require.NoError(t, err)
	assert.Nil(t, got)
	ids, err := b.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids)
}

// REF 12.6.2: a save whose ctx carries a claim is fenced by the lease: it
// succeeds while the claim holds, and once another node has taken the key
// over the server refuses it, even from a node that still believes it
// holds the lease; the record stays the new owner's.
func TestStoreFencedByLease(t *testing.T) {
	url := server(t).URL()
	ba, bb := connect(t, url, "a"), connect(t, url, "b")
	a, b := ba.Checkpoints(checkpoint.Policy{}), bb.Checkpoints(checkpoint.Policy{})
	ca := acquire(t, ba, sk)
	actx := session.ContextWithClaim(t.Context(), ca)
	require.NoError(t, a.Save(actx, checkpointtest.NewCheckpoint("run-fenced", 1)))

	nats.Believe(ca)
	nats.Abandon(ca) // a stops renewing but believes it holds the key
	cb, _ := takeOver(t, bb, sk)
	bctx := session.ContextWithClaim(t.Context(), cb)
	require.NoError(t, b.Save(bctx, checkpointtest.NewCheckpoint("run-fenced", 2)))

	err := a.Save(actx, checkpointtest.NewCheckpoint("run-fenced", 3))
	require.ErrorIs(t, err, fault.NotAvailable, "a write behind a moved lease is refused")
	require.ErrorIs(t, a.Delete(actx, "run-fenced"), fault.NotAvailable, "so is a delete")
	got, err := a.Load(t.Context(), "run-fenced")
	require.NoError(t, err)
	assert.Equal(t, 2, got.Iteration, "the new owner's record stays")

	require.NoError(t, cb.Release(t.Context()))
	err = b.Save(bctx, checkpointtest.NewCheckpoint("run-fenced", 4))
	require.ErrorIs(t, err, fault.NotAvailable, "a released claim fences nothing")
}

// The factory builds the store of its bus dependency; its settings are
// decoded strictly, and a dependency that is not a nats bus is refused.
func TestStoreFactory(t *testing.T) {
	b := connect(t, server(t).URL(), "a")
	f := nats.StoreFactory()
	assert.Equal(t, checkpoint.Kind, f.Spec().Kind)
	assert.Equal(t, nats.ImplJetStream, f.Spec().Impl)
	tests := []struct {
		name     string
		settings string
		dep      any
		kind     error
	}{
		{"built", `{"max_deltas": 8}`, b, nil},
		{"unknown setting", `{"prefix": "x"}`, b, fault.Validation},
		{"negative max_deltas", `{"max_deltas": -1}`, b, fault.Validation},
		{"not a nats bus", `{}`, "bus", fault.Validation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := f.New(t.Context(), resource.Input{Name: "checkpoints", Settings: []byte(tt.settings),
				Deps: map[string]any{nats.BusDep: tt.dep}})
			if tt.kind != nil {
				require.ErrorIs(t, err, tt.kind)
				assert.Contains(t, err.Error(), `"checkpoints"`)
				return
			}
			require.NoError(t, err)
			st := v.(*nats.Store)
			require.NoError(t, st.Save(t.Context(), checkpointtest.NewCheckpoint("run-built", 1)))
		})
	}
}

// REF 12.6.4: DeleteSession on a runtime whose store is the jetstream
// store removes the session's record and its parked run; an expired ctx
// removes nothing; a second delete is not an error.
func TestDeleteSessionOnJetStream(t *testing.T) {
	url := natstest.URLs(natstest.Cluster(t, 3))
	dir, err := filepath.Abs(filepath.Join(docDir, "chaos"))
	require.NoError(t, err)
	doc, _, err := deploy.LoadLayers([]deploy.Layer{{Name: "base", Data: read(t, dir, "deploy.yaml"), File: "deploy.yaml"}},
		deploy.ParseConfig{BaseDir: dir})
	require.NoError(t, err)
	n := build(t, doc, url, "a")
	v, ok := n.app.Resource("checkpoints")
	require.True(t, ok)
	store := v.(*nats.Store)
	key := session.Key{AgentID: chaosAgent, ContextID: "deleted"}

	committed, err := n.start(t, key)
	require.NoError(t, err)
	require.True(t, replyTo(t, committed, n.asks(t, committed), "yes").Committed)
	parked, err := n.start(t, key)
	require.NoError(t, err)
	n.asks(t, parked)
	parked.Cancel()
	_, _ = parked.Wait(t.Context())
	ids, err := store.List(t.Context())
	require.NoError(t, err)
	require.ElementsMatch(t, []string{session.SessionRecordID(key), parked.RunID()}, ids, "the record and the parked run")

	expired, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, n.app.Sessions().DeleteSession(expired, key), context.Canceled)
	ids, err = store.List(t.Context())
	require.NoError(t, err)
	assert.Len(t, ids, 2, "an expired delete removes nothing")

	require.NoError(t, n.app.Sessions().DeleteSession(t.Context(), key))
	ids, err = store.List(t.Context())
	require.NoError(t, err)
	assert.Empty(t, ids)
	rec, err := store.Load(t.Context(), session.SessionRecordID(key))
	require.NoError(t, err)
	assert.Nil(t, rec)
	require.NoError(t, n.app.Sessions().DeleteSession(t.Context(), key), "deleting again")
}

// REF 12.6.6: a node that stalls between a fenced delete's deletion entry
// and its purge, while another node takes the session over and saves,
// purges only what came up to its deletion entry: the new owner's record
// stays.
func TestStalledDeleteKeepsSuccessorsRecord(t *testing.T) {
	url := server(t).URL()
	short := func(c *nats.Config) { c.LeaseTTL = time.Second }
	ba, bb := connect(t, url, "a", short), connect(t, url, "b", short)
	a, b := ba.Checkpoints(checkpoint.Policy{}), bb.Checkpoints(checkpoint.Policy{})
	ca := acquire(t, ba, sk)
	actx := session.ContextWithClaim(t.Context(), ca)
	require.NoError(t, a.Save(actx, checkpointtest.NewCheckpoint("run-stalled", 1)))

	nats.PauseAfterDeletion(a, func() {
		nats.Abandon(ca) // a stalls: it renews nothing meanwhile
		cb, _ := takeOver(t, bb, sk)
		bctx := session.ContextWithClaim(t.Context(), cb)
		require.NoError(t, b.Save(bctx, checkpointtest.NewCheckpoint("run-stalled", 2)))
	})
	require.NoError(t, a.Delete(actx, "run-stalled"))
	got, err := b.Load(t.Context(), "run-stalled")
	require.NoError(t, err)
	require.NotNil(t, got, "the stalled node's purge removed the new owner's record")
	assert.Equal(t, 2, got.Iteration)
}

// REF 12.3.8: DeleteSession on one node of a session whose turn runs on
// another is refused with an OwnedError naming the owner, and removes
// nothing; once the turn is over the delete takes the key and removes
// the session's state for every node.
func TestDeleteSessionOwnedElsewhere(t *testing.T) {
	url := natstest.URLs(natstest.Cluster(t, 3))
	dir, err := filepath.Abs(filepath.Join(docDir, "chaos"))
	require.NoError(t, err)
	doc, _, err := deploy.LoadLayers([]deploy.Layer{{Name: "base", Data: read(t, dir, "deploy.yaml"), File: "deploy.yaml"}},
		deploy.ParseConfig{BaseDir: dir})
	require.NoError(t, err)
	a, b := build(t, doc, url, "a"), build(t, doc, url, "b")
	v, _ := b.app.Resource("checkpoints")
	store := v.(*nats.Store)
	key := session.Key{AgentID: chaosAgent, ContextID: "owned"}

	onA, err := a.start(t, key)
	require.NoError(t, err)
	asked := a.asks(t, onA)
	err = b.app.Sessions().DeleteSession(t.Context(), key)
	var owned *session.OwnedError
	require.True(t, errors.As(err, &owned), "want an OwnedError, got %v", err)
	assert.Equal(t, "a", owned.Owner)
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.Contains(t, err.Error(), "delete session: session")
	rec, err := store.Load(t.Context(), session.SessionRecordID(key))
	require.NoError(t, err)
	require.NotNil(t, rec, "a refused delete removes nothing")

	require.True(t, replyTo(t, onA, asked, "yes").Committed, "the turn on a went on undisturbed")
	require.NoError(t, b.app.Sessions().DeleteSession(t.Context(), key))
	rec, err = store.Load(t.Context(), session.SessionRecordID(key))
	require.NoError(t, err)
	assert.Nil(t, rec)
	next, err := a.start(t, key)
	require.NoError(t, err, "the key is free again: the delete released it")
	next.Cancel()
	_, _ = next.Wait(t.Context())
}
