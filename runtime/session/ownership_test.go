package session_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeOwnership grants a key to one claim at a time; keys in elsewhere are
// held by another node.
type fakeOwnership struct {
	mu        sync.Mutex
	elsewhere map[session.Key]bool
	held      map[session.Key]*fakeClaim
	claims    []*fakeClaim
}

func newFakeOwnership() *fakeOwnership {
	return &fakeOwnership{elsewhere: map[session.Key]bool{}, held: map[session.Key]*fakeClaim{}}
}

func (o *fakeOwnership) Acquire(_ context.Context, key session.Key) (session.Claim, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.elsewhere[key] || o.held[key] != nil {
		return nil, &session.OwnedError{Key: key, Owner: "n2", Address: "http://n2:8080"}
	}
	c := &fakeClaim{o: o, key: key, token: uint64(len(o.claims) + 1), lost: make(chan struct{})}
	o.held[key] = c
	o.claims = append(o.claims, c)
	return c, nil
}

func (o *fakeOwnership) holder(key session.Key) *fakeClaim {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.held[key]
}

type fakeClaim struct {
	o     *fakeOwnership
	key   session.Key
	token uint64
	once  sync.Once
	lost  chan struct{}

	mu       sync.Mutex
	err      error
	released bool
}

func (c *fakeClaim) Owner() string         { return "n1" }
func (c *fakeClaim) Token() uint64         { return c.token }
func (c *fakeClaim) Lost() <-chan struct{} { return c.lost }
func (c *fakeClaim) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *fakeClaim) end(err error) {
	c.once.Do(func() {
		c.mu.Lock()
		c.err, c.released = err, err == nil
		c.mu.Unlock()
		c.o.mu.Lock()
		if c.o.held[c.key] == c {
			delete(c.o.held, c.key)
		}
		c.o.mu.Unlock()
		close(c.lost)
	})
}

func (c *fakeClaim) Release(context.Context) error { c.end(nil); return nil }

func (c *fakeClaim) wasReleased() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.released
}

// ownedEnv is an env whose epoch runs under own.
func ownedEnv(t *testing.T, eng agent.Engine, own session.Ownership) *env {
	t.Helper()
	e := newEnv(t, eng)
	deps := e.m.Deps()
	deps.Ownership = own
	require.NoError(t, e.m.SwapDeps(deps, nil))
	return e
}

// REF 12.3.1: a turn on a key another node owns is refused with an
// *session.OwnedError (NotAvailable) naming the owner and its address;
// nothing runs.
func TestStartRefusedWhenOwnedElsewhere(t *testing.T) {
	eng := agenttest.New(agenttest.Say("hi"))
	own := newFakeOwnership()
	own.elsewhere[key("c1")] = true
	e := ownedEnv(t, eng, own)
	_, err := e.open(key("c1")).Session().Start(context.Background(), ask("hi"))
	isKind(t, err, fault.NotAvailable)
	var owned *session.OwnedError
	require.True(t, errors.As(err, &owned))
	assert.Equal(t, "n2", owned.Owner)
	assert.Contains(t, err.Error(), `owned by node "n2" at http://n2:8080`)
	assert.Empty(t, eng.Runs(), "a refused turn runs nothing")
	// another key is free
	res := settle(t, e.start("c2", "hi"))
	assert.Equal(t, agent.StatusCompleted, res.Status)
}

// REF 12.3.2: the turn holds its claim while it runs, its run's ctx
// carries the claim (for a store to fence its writes), and the claim is
// released once the turn has settled.
func TestClaimHeldWhileTurnRuns(t *testing.T) {
	gate := agenttest.NewGate()
	var seen session.Claim
	eng := agenttest.New(agenttest.Func(func(ctx context.Context, _ *agenttest.Env) error {
		seen, _ = session.ClaimFromContext(ctx)
		return nil
	}), agenttest.WaitGate(gate))
	own := newFakeOwnership()
	e := ownedEnv(t, eng, own)
	tr := e.start("c1", "hi")
	reached(t, gate)
	c := own.holder(key("c1"))
	require.NotNil(t, c, "the key is held while the turn runs")
	assert.Same(t, c, seen, "the run's ctx carries the turn's claim")
	_, err := own.Acquire(context.Background(), key("c1"))
	assert.ErrorIs(t, err, fault.NotAvailable, "a second claim is refused while the first is held")
	gate.Open()
	assert.Equal(t, agent.StatusCompleted, settle(t, tr).Status)
	assert.True(t, c.wasReleased(), "the claim is released once the turn settled")
	assert.Nil(t, own.holder(key("c1")))
	// the next turn takes a new claim
	settle(t, e.start("c1", "again"))
	assert.Len(t, own.claims, 2)
}

// REF 12.3.3: a turn whose claim is lost is cancelled: it settles as
// canceled and Wait returns the claim's error.
func TestLostClaimStopsTurn(t *testing.T) {
	gate := agenttest.NewGate()
	eng := agenttest.New(agenttest.WaitGate(gate))
	own := newFakeOwnership()
	e := ownedEnv(t, eng, own)
	tr := e.start("c1", "hi")
	reached(t, gate)
	lostErr := fault.New(fault.NotAvailable, "session lease", "not renewed")
	own.holder(key("c1")).end(lostErr)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	res, err := tr.Wait(ctx)
	require.ErrorIs(t, err, lostErr)
	require.NotNil(t, res)
	assert.Equal(t, session.TurnCanceled, tr.State())
}

// REF 12.3.4: without an ownership (Deps.Ownership nil) every turn runs
// under LocalOwnership, whose claim has token 0 and is never lost.
func TestLocalOwnershipByDefault(t *testing.T) {
	var seen session.Claim
	eng := agenttest.New(agenttest.Func(func(ctx context.Context, _ *agenttest.Env) error {
		seen, _ = session.ClaimFromContext(ctx)
		return nil
	}))
	e := newEnv(t, eng)
	settle(t, e.start("c1", "hi"))
	require.NotNil(t, seen)
	assert.Equal(t, uint64(0), seen.Token())
	assert.NoError(t, seen.Err())
	c, err := session.LocalOwnership().Acquire(context.Background(), key("c1"))
	require.NoError(t, err)
	require.NoError(t, c.Release(context.Background()))
	require.NoError(t, c.Release(context.Background()))
	within(t, c.Lost(), "a released local claim")
	assert.NoError(t, c.Err())
}

// REF 12.3.1: Resume claims the key before it reads the parked run: on a
// key another node owns it is refused with an OwnedError; otherwise the
// claim is released when there is nothing to resume.
func TestResumeClaimsBeforeReading(t *testing.T) {
	e := newDurableEnv(t, agenttest.New(agenttest.Say("hi")))
	own := newFakeOwnership()
	own.elsewhere[key("c1")] = true
	deps := e.m.Deps()
	deps.Ownership = own
	require.NoError(t, e.m.SwapDeps(deps, nil))
	s := e.open(key("c1")).Session()
	_, err := s.Resume(context.Background())
	var owned *session.OwnedError
	require.True(t, errors.As(err, &owned), "want an OwnedError, got %v", err)

	own.mu.Lock()
	delete(own.elsewhere, key("c1"))
	own.mu.Unlock()
	_, err = s.Resume(context.Background())
	isKind(t, err, fault.NotFound) // nothing parked
	require.Len(t, own.claims, 1)
	assert.True(t, own.claims[0].wasReleased(), "the claim of a refused Resume is released")
	assert.Nil(t, own.holder(key("c1")))
}

// claimSeen is a checkpoint store that records the exec ids of the saves
// whose ctx carried no claim: writes a store could not fence.
type claimSeen struct {
	*checkpoint.Store
	mu        sync.Mutex
	unclaimed []string
}

func (s *claimSeen) Save(ctx context.Context, cp agent.Checkpoint) error {
	if _, ok := session.ClaimFromContext(ctx); !ok {
		s.mu.Lock()
		s.unclaimed = append(s.unclaimed, cp.ExecID)
		s.mu.Unlock()
	}
	return s.Store.Save(ctx, cp)
}

// REF 12.3.2: a Resume that finds its parked run's checkpoint gone
// clears the session's mark under the claim it took first, so that a
// store fences that write too: a node that stalled after its claim was
// lost cannot overwrite the record of the node that took the key over.
func TestResumeClearsMarkUnderItsClaim(t *testing.T) {
	base := workspaceStore(t, t.TempDir())
	store := &claimSeen{Store: base}
	e := newEnvWith(t, store, true, resumable{Engine: agenttest.New(agenttest.WaitInterrupt())})
	tr := parkRun(t, e, "c")
	require.NoError(t, base.Delete(context.Background(), tr.RunID()), "the parked run's checkpoint is gone")
	own := newFakeOwnership()
	deps := e.m.Deps()
	deps.Ownership = own
	require.NoError(t, e.m.SwapDeps(deps, nil))
	store.mu.Lock()
	store.unclaimed = nil
	store.mu.Unlock()

	_, err := tr.Session().Resume(context.Background())
	isKind(t, err, fault.NotFound)
	_, ok, err := tr.Session().Resumable(context.Background())
	require.NoError(t, err)
	assert.False(t, ok, "the mark is cleared")
	store.mu.Lock()
	defer store.mu.Unlock()
	assert.Empty(t, store.unclaimed, "every write of the Resume carried its claim")
}

// claimSeeingStore records the claims its deletes' ctx carried.
type claimSeeingStore struct {
	agent.CheckpointStore
	mu     sync.Mutex
	claims []session.Claim
	held   func() bool
}

func (s *claimSeeingStore) Delete(ctx context.Context, id string) error {
	c, _ := session.ClaimFromContext(ctx)
	s.mu.Lock()
	s.claims = append(s.claims, c)
	s.mu.Unlock()
	if !s.held() {
		return fault.New(fault.Internal, "test store", "delete of %s without the key's claim", id)
	}
	return s.CheckpointStore.(agent.CheckpointDeleter).Delete(ctx, id)
}

// REF 12.3.8: DeleteSession takes the key's claim before it removes the
// durable state and holds it while it does (the store's deletes carry it,
// to fence them), then releases it; a key another node holds is refused
// with an OwnedError naming that node, and nothing is removed.
func TestDeleteSessionClaimsTheKey(t *testing.T) {
	own := newFakeOwnership()
	store := &claimSeeingStore{CheckpointStore: workspaceStore(t, t.TempDir())}
	store.held = func() bool { return own.holder(key("c1")) != nil }
	e := newEnvWith(t, store, true, agenttest.New(agenttest.Say("hi")))
	deps := e.m.Deps()
	deps.Ownership = own
	require.NoError(t, e.m.SwapDeps(deps, nil))
	settle(t, e.start("c1", "hi"))
	recordID := session.SessionRecordID(key("c1"))
	cp, err := store.Load(context.Background(), recordID)
	require.NoError(t, err)
	require.NotNil(t, cp, "the session has a record")

	own.mu.Lock()
	own.elsewhere[key("c1")] = true
	own.mu.Unlock()
	err = e.m.DeleteSession(context.Background(), key("c1"))
	var owned *session.OwnedError
	require.True(t, errors.As(err, &owned), "want an OwnedError, got %v", err)
	assert.Equal(t, "n2", owned.Owner)
	isKind(t, err, fault.NotAvailable)
	assert.Contains(t, err.Error(), `delete session: session`)
	cp, err = store.Load(context.Background(), recordID)
	require.NoError(t, err)
	assert.NotNil(t, cp, "a refused delete removes nothing")

	own.mu.Lock()
	own.elsewhere[key("c1")] = false
	own.mu.Unlock()
	store.mu.Lock()
	store.claims = nil
	store.mu.Unlock()
	require.NoError(t, e.m.DeleteSession(context.Background(), key("c1")))
	own.mu.Lock()
	mine := own.claims[len(own.claims)-1]
	own.mu.Unlock()
	store.mu.Lock()
	seen := store.claims
	store.mu.Unlock()
	require.NotEmpty(t, seen)
	for _, c := range seen {
		assert.True(t, c == session.Claim(mine), "each delete carries the delete's claim")
	}
	assert.True(t, mine.wasReleased(), "released once the state is gone")
	cp, err = store.Load(context.Background(), recordID)
	require.NoError(t, err)
	assert.Nil(t, cp)
}
