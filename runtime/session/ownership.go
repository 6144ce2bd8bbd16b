package session

import (
	"context"
	"fmt"
	"sync"

	"github.com/corral-rt/corral/fault"
)

// Ownership decides which node of a deployment runs the turns of a session
// key when several nodes share the sessions' durable state (docs/distributed.md).
// The Manager acquires a Claim when a turn starts (Start or Resume, before
// it reads the session's durable state), holds it while the turn runs, and
// releases it once the turn has settled and its state is written. So at
// most one turn of a key runs in the whole deployment, and any node can run
// the next one.
//
// A turn on a key that another node holds is refused, not forwarded: the
// error is an *OwnedError (kind NotAvailable) naming the owner and where
// it is reached, so that a transport in front of the runtime (an HTTP
// server) can send the client there. Forwarding a turn with its stream,
// steering and prompts is a transport's job, not the session layer's.
//
// Implementations are safe for concurrent use. Deps.Ownership nil is
// LocalOwnership.
type Ownership interface {
	// Acquire claims key for one turn of this node. It returns the claim,
	// an *OwnedError when another node holds the key, NotAvailable when
	// the ownership service cannot be reached, or ctx's error.
	Acquire(ctx context.Context, key Key) (Claim, error)
}

// Claim is one node's hold on a session key for one turn.
type Claim interface {
	// Owner names the node that holds the claim.
	Owner() string
	// Token is the claim's fencing token: it grows with every renewal
	// and with every new owner of the key, so a store that remembers the
	// largest token it saw for a key can refuse a write that carries a
	// smaller one. LocalOwnership's claims have token 0.
	Token() uint64
	// Lost is closed once the claim is over: lost (Err says why) or
	// released. The Manager cancels a turn whose claim is lost.
	Lost() <-chan struct{}
	// Err is nil while the claim is held and after a Release; once the
	// claim is lost it says why (kind NotAvailable).
	Err() error
	// Release gives the key up. It is idempotent.
	Release(ctx context.Context) error
}

// OwnershipProvider is implemented by a deployment resource that knows
// the session ownership of its node. A runtime whose event bus is one runs
// its turns under that ownership, so that the same document runs on one
// machine or on several by changing its resources only.
type OwnershipProvider interface {
	SessionOwnership() Ownership
}

// OwnedError refuses a turn, or a DeleteSession, on a key that another
// node owns. It matches
// fault.NotAvailable with errors.Is.
type OwnedError struct {
	Key     Key
	Owner   string // the node that holds the key
	Address string // where the owner is reached, when it says; may be ""
	Op      string // what was refused; "": start turn
}

func (e *OwnedError) Error() string {
	op := e.Op
	if op == "" {
		op = "start turn"
	}
	msg := fmt.Sprintf("%s: session %s is owned by node %q", op, e.Key, e.Owner)
	if e.Address != "" {
		msg += " at " + e.Address
	}
	return msg
}

// Unwrap returns the error's kind, fault.NotAvailable.
func (e *OwnedError) Unwrap() error { return fault.NotAvailable }

// LocalOwnership is the ownership of a runtime alone on its machine: every
// Acquire succeeds at once and no claim is ever lost.
func LocalOwnership() Ownership { return localOwnership{} }

type localOwnership struct{}

func (localOwnership) Acquire(context.Context, Key) (Claim, error) { return newLocalClaim(), nil }

type localClaim struct {
	once sync.Once
	done chan struct{}
}

func newLocalClaim() *localClaim { return &localClaim{done: make(chan struct{})} }

func (*localClaim) Owner() string           { return "local" }
func (*localClaim) Token() uint64           { return 0 }
func (c *localClaim) Lost() <-chan struct{} { return c.done }
func (*localClaim) Err() error              { return nil }
func (c *localClaim) Release(context.Context) error {
	c.once.Do(func() { close(c.done) })
	return nil
}

type claimKey struct{}

// ContextWithClaim returns ctx carrying c. The Manager puts a turn's claim
// on the ctx of its run and of the writes of its session state, so that a
// checkpoint store can fence its writes with ClaimFromContext.
func ContextWithClaim(ctx context.Context, c Claim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

// ClaimFromContext returns the claim ctx carries, if any.
func ClaimFromContext(ctx context.Context) (Claim, bool) {
	c, ok := ctx.Value(claimKey{}).(Claim)
	return c, ok
}

// claim acquires key for a turn from own (nil: LocalOwnership).
func (s *Session) claim(ctx context.Context, own Ownership) (Claim, error) {
	if own == nil {
		return newLocalClaim(), nil
	}
	c, err := own.Acquire(ctx, s.key)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fault.New(fault.Internal, "start turn", "ownership returned a nil claim for %s", s.key)
	}
	return c, nil
}

// launchClaim returns the claim of a Resume, or acquires one from the
// epoch's ownership.
func (s *Session) launchClaim(ctx context.Context, ep *epoch, rs *resumeState) (Claim, error) {
	if rs != nil && rs.claim != nil {
		return rs.claim, nil
	}
	return s.claim(ctx, ep.deps.Ownership)
}

// watchClaim cancels the turn when its claim is lost before the turn
// settles; it returns when either happens.
func (t *Turn) watchClaim() {
	select {
	case <-t.claim.Lost():
		if t.claim.Err() != nil {
			t.Cancel()
		}
	case <-t.done:
	}
}

// releaseClaim gives the turn's claim up once its state is written.
func (t *Turn) releaseClaim() {
	ctx, cancel := context.WithTimeout(context.Background(), durableTimeout)
	defer cancel()
	if err := t.claim.Release(ctx); err != nil {
		t.s.m.logger.Warn("release session claim", "session", t.s.key.String(), "run", t.runID, "error", err)
	}
}
