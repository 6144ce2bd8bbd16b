package nats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Ownership is the session.Ownership of nodes that share a NATS
// deployment: one lease per session key in a JetStream key-value bucket.
// Acquire creates the key with a per-key TTL (Config.LeaseTTL), which
// succeeds only when no other node holds it; the holder renews it every
// third of the TTL by compare-and-swap on its last revision. A lease that
// is not renewed is removed by the server when its TTL passes, and
// another node's Acquire takes the key over. The holder gives up on its
// own first: its claim is lost once a TTL has passed since it sent the
// last renewal that succeeded, which is before the server can let the
// lease lapse; a renewal refused because the revision moved (another node
// took the key) loses it at once.
//
// Writes fenced by a claim (PutFenced) go into the same bucket with the
// lease's current revision as the expected last sequence of the lease's
// subject: the server refuses them once the lease has changed hands, even
// when a partitioned node still believes it holds it.
type Ownership struct {
	b   *Bus
	kv  jetstream.KeyValue
	ttl time.Duration

	mu     sync.Mutex
	claims map[*Claim]struct{}
	closed bool
}

var _ session.Ownership = (*Ownership)(nil)

// leaseRecord is the value of a lease key.
type leaseRecord struct {
	Node      string    `json:"node"`
	Address   string    `json:"address,omitempty"`
	AgentID   string    `json:"agent_id"`
	ContextID string    `json:"context_id"`
	Since     time.Time `json:"since"`
}

func newOwnership(ctx context.Context, b *Bus) (*Ownership, error) {
	kv, err := b.ensureBucket(ctx)
	if err != nil {
		return nil, err
	}
	return &Ownership{b: b, kv: kv, ttl: b.cfg.LeaseTTL, claims: map[*Claim]struct{}{}}, nil
}

// ensureBucket makes sure the lease bucket exists with the bus's
// settings: when the bus connects, and again when a write finds it
// missing (a server with storage: memory restarted).
func (b *Bus) ensureBucket(ctx context.Context) (jetstream.KeyValue, error) {
	if err := b.checkDeployment(ctx, "KV_"+b.cfg.LeaseBucket, "lease_bucket"); err != nil {
		return nil, err
	}
	kv, err := b.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         b.cfg.LeaseBucket,
		Description:    "corral session leases",
		History:        1,
		Storage:        b.cfg.storage(),
		Replicas:       b.cfg.Replicas,
		LimitMarkerTTL: b.cfg.LeaseTTL,
		Metadata:       b.deploymentMetadata(),
	})
	if err != nil {
		return nil, fault.Wrap(fault.NotAvailable, err, "nats connect", "lease bucket %s", b.cfg.LeaseBucket)
	}
	return kv, nil
}

// Ownership returns the session ownership of the bus's node.
func (b *Bus) Ownership() *Ownership { return b.own }

// SessionOwnership returns Ownership as a session.Ownership: a runtime
// whose event_bus is a nats bus runs its sessions' turns under it
// (session.OwnershipProvider).
func (b *Bus) SessionOwnership() session.Ownership { return b.own }

var _ session.OwnershipProvider = (*Bus)(nil)

// LeaseKey returns the key of key's lease in the bucket.
func LeaseKey(key session.Key) string { return "lease." + session.SessionRecordID(key) }

func (o *Ownership) subject(k string) string { return "$KV." + o.b.cfg.LeaseBucket + "." + k }

// Acquire claims key for this node, or returns an *session.OwnedError
// naming the node that holds it. A server that cannot be reached is
// NotAvailable.
func (o *Ownership) Acquire(ctx context.Context, key session.Key) (session.Claim, error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "acquire session", "ctx must not be nil")
	}
	if err := key.Validate(); err != nil {
		return nil, err
	}
	rec, _ := json.Marshal(leaseRecord{Node: o.b.cfg.Node, Address: o.b.cfg.Advertise,
		AgentID: key.AgentID, ContextID: key.ContextID, Since: time.Now().UTC()})
	k := LeaseKey(key)
	sent := time.Now()
	rev, err := o.kv.Create(ctx, k, rec, jetstream.KeyTTL(o.ttl))
	if missing(err) { // the bucket is gone (a server with storage: memory restarted): make it again
		if _, berr := o.b.ensureBucket(ctx); berr == nil {
			sent = time.Now()
			rev, err = o.kv.Create(ctx, k, rec, jetstream.KeyTTL(o.ttl))
		}
	}
	for attempt := 0; wrongSequence(err) && attempt < 3; attempt++ {
		// The key changed under Create: the server wrote the delete
		// marker of a lapsed lease between Create's read and its write,
		// or a first attempt was stored but not acknowledged. Look again,
		// as Claim.heal does: this node's record is its claim, another
		// node's is its hold, and a marker or nothing is free.
		m, lerr := o.b.lastMsg(ctx, "KV_"+o.b.cfg.LeaseBucket, o.subject(k))
		if lerr != nil {
			break
		}
		if m != nil && bytes.Equal(m.data, rec) {
			rev, err = m.seq, nil
			break
		}
		if m != nil && len(m.data) != 0 {
			err = jetstream.ErrKeyExists
			break
		}
		rev, err = o.kv.Create(ctx, k, rec, jetstream.KeyTTL(o.ttl))
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, o.owned(ctx, key, k)
	}
	if err != nil {
		o.takeBack(ctx, k, rec)
		if ctx.Err() != nil {
			return nil, fault.FromContext(ctx.Err(), "acquire session")
		}
		return nil, fault.Wrap(fault.NotAvailable, err, "acquire session", "%s", key)
	}
	c := &Claim{o: o, key: key, k: k, value: rec, rev: rev, deadline: sent.Add(o.ttl),
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		_ = o.kv.Delete(context.WithoutCancel(ctx), k, jetstream.LastRevision(rev))
		return nil, event.ErrBusClosed
	}
	o.claims[c] = struct{}{}
	o.mu.Unlock()
	go c.renew()
	return c, nil
}

// takeBack deletes the lease k when it holds rec, the record of an
// Acquire that failed after the server may have stored it (its ctx ended,
// or the answer was lost): nothing renews it, and it would refuse every
// turn on the key, this node's own included, until its TTL passed. Best
// effort, within closeRelease of its own, and only while connected.
func (o *Ownership) takeBack(ctx context.Context, k string, rec []byte) {
	if !o.b.nc.IsConnected() {
		return // what cannot be asked lapses with its TTL
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeRelease)
	defer cancel()
	m, err := o.b.lastMsg(ctx, "KV_"+o.b.cfg.LeaseBucket, o.subject(k))
	if err == nil && m != nil && bytes.Equal(m.data, rec) {
		_ = o.kv.Delete(ctx, k, jetstream.LastRevision(m.seq))
	}
}

// owned builds the error that names the holder of key.
func (o *Ownership) owned(ctx context.Context, key session.Key, k string) error {
	e := &session.OwnedError{Key: key, Owner: "another node"}
	if entry, err := o.kv.Get(ctx, k); err == nil {
		var rec leaseRecord
		if json.Unmarshal(entry.Value(), &rec) == nil && rec.Node != "" {
			e.Owner, e.Address = rec.Node, rec.Address
		}
	}
	return e
}

// close loses every claim the node holds; Bus.Close calls it before it
// closes the connection.
func (o *Ownership) close() {
	o.mu.Lock()
	o.closed = true
	claims := make([]*Claim, 0, len(o.claims))
	for c := range o.claims {
		claims = append(claims, c)
	}
	o.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), closeRelease)
	defer cancel()
	gone := fault.New(fault.NotAvailable, "session lease", "the bus of node %q closed", o.b.cfg.Node)
	for _, c := range claims {
		_ = c.end(ctx, gone) // a turn still running on it is stopped
	}
}

// closeRelease bounds the deletes of the leases a closing bus still
// holds; a bus that is not connected deletes none.
const closeRelease = 5 * time.Second

// Claim is a lease this node holds on a session key.
type Claim struct {
	o     *Ownership
	key   session.Key
	k     string
	value []byte

	mu       sync.Mutex // held by a renewal and a fenced write, so the revision is stable
	rev      uint64
	deadline time.Time // the claim is lost past it
	unacked  time.Time // when the oldest renewal not answered since the last answer was sent; zero: none
	err      error
	ended    bool // released or ended by the bus's close: err is final
	lost     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	lostOnce sync.Once
}

var _ session.Claim = (*Claim)(nil)

// Owner returns this node's name.
func (c *Claim) Owner() string { return c.o.b.cfg.Node }

// Token returns the lease's current revision.
func (c *Claim) Token() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev
}

// Lost is closed once the claim is lost or released.
func (c *Claim) Lost() <-chan struct{} { return c.lost }

// Err says why the claim was lost; nil while held or after Release.
func (c *Claim) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended && c.err == nil && time.Now().After(c.deadline) {
		return c.expiredErr()
	}
	return c.err
}

func (c *Claim) expiredErr() error {
	return fault.New(fault.NotAvailable, "session lease", "%s: lease of node %q not renewed within %s", c.key, c.Owner(), c.o.ttl)
}

// renew renews the lease every third of its TTL until the claim is
// released or lost.
func (c *Claim) renew() {
	defer close(c.done)
	tick := time.NewTicker(c.o.ttl / 3)
	defer tick.Stop()
	for {
		c.mu.Lock()
		wait := time.Until(c.deadline)
		c.mu.Unlock()
		expire := time.NewTimer(wait)
		select {
		case <-c.stop:
			expire.Stop()
			return
		case <-expire.C:
			c.lose(c.expiredErr())
			return
		case <-tick.C:
			expire.Stop()
		}
		if err := c.renewOnce(); err != nil {
			c.lose(err)
			return
		}
	}
}

// renewOnce rewrites the lease with a fresh TTL if it is still at the
// claim's revision. An error means the lease is gone; a failure to reach
// the server is not an error: the next tick, or the deadline, decides.
func (c *Claim) renewOnce() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	sent := time.Now()
	if sent.After(c.deadline) {
		return c.expiredErr()
	}
	// One attempt waits a third of the TTL at most: an answer lost or
	// late is asked for again at the next tick, while the claim lasts,
	// rather than waited for until the claim's deadline.
	ctx, cancel := context.WithDeadline(context.Background(), minTime(c.deadline, sent.Add(c.o.ttl/3)))
	defer cancel()
	msg := &natsgo.Msg{Subject: c.o.subject(c.k), Data: c.value}
	ack, err := c.o.b.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(c.rev), jetstream.WithMsgTTL(c.o.ttl))
	switch {
	case err == nil:
		c.rev, c.deadline, c.unacked = ack.Sequence, sent.Add(c.o.ttl), time.Time{}
		return nil
	case wrongSequence(err):
		kept, herr := c.heal(ctx, sent)
		if kept || herr != nil { // herr: the lease could not be read or written; the next tick, or the deadline, decides
			return nil
		}
		return fault.Wrap(fault.NotAvailable, err, "session lease", "%s: taken over by another node", c.key)
	}
	if c.unacked.IsZero() {
		c.unacked = sent // it may yet be stored, with a TTL counted from its receipt
	}
	return nil
}

// heal reads the lease from the stream's leader after a renewal was
// refused, and keeps the claim when no other node holds the key:
//   - the record at the claim's revision is still the claim's: the
//     leader refuses an expected sequence while another write that names
//     the lease's subject is in flight;
//   - a renewal whose first attempt was stored but not acknowledged (a
//     busy server, a publish retried) finds its own record at a newer
//     revision;
//   - the server may leave a late subject delete marker for the lease this
//     claim took over when it lapsed, removing this claim's record (its
//     expiry check and the marker's write are not one step): a marker
//     while the claim is within its deadline is no other node's hold,
//     and the claim writes its record again over it by compare-and-swap.
//
// It reports whether the claim still holds; an error says that the lease
// could not be read, or written again over a marker (the server did not
// answer in time): nothing is decided. It runs under c.mu.
func (c *Claim) heal(ctx context.Context, sent time.Time) (bool, error) {
	m, err := c.o.b.lastMsg(ctx, "KV_"+c.o.b.cfg.LeaseBucket, c.o.subject(c.k))
	switch {
	case err != nil:
		return false, err
	case m == nil || m.seq < c.rev:
		return false, nil
	case m.seq == c.rev:
		// Still the claim's record: the refusal was the leader's while a
		// write that names the lease was in flight. The next renewal, or
		// the deadline, decides.
		return bytes.Equal(m.data, c.value), nil
	case bytes.Equal(m.data, c.value):
		// An earlier attempt that was not answered was stored: its TTL
		// started when the server received it, after it was sent.
		if !c.unacked.IsZero() {
			sent = c.unacked
		}
		c.rev, c.deadline, c.unacked = m.seq, sent.Add(c.o.ttl), time.Time{}
		return true, nil
	case len(m.data) != 0:
		return false, nil // another node's record
	}
	msg := &natsgo.Msg{Subject: c.o.subject(c.k), Data: c.value}
	ack, err := c.o.b.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(m.seq), jetstream.WithMsgTTL(c.o.ttl))
	switch {
	case wrongSequence(err):
		return false, nil // another write came first: another node's, or the next look decides
	case err != nil:
		return false, err
	}
	c.rev, c.deadline, c.unacked = ack.Sequence, sent.Add(c.o.ttl), time.Time{}
	return true, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func wrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// lose marks the claim lost with err.
func (c *Claim) lose(err error) {
	c.lostOnce.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.lost)
		c.o.forget(c)
	})
}

func (o *Ownership) forget(c *Claim) {
	o.mu.Lock()
	delete(o.claims, c)
	o.mu.Unlock()
}

// Release stops renewing and deletes the lease if it is still this
// node's, so that another node can take the key at once; Err stays nil.
// It is idempotent; a claim already lost is left as it is.
func (c *Claim) Release(ctx context.Context) error { return c.end(ctx, nil) }

// end stops renewing and deletes the lease if it is still held; the claim
// ends lost with why, or released when why is nil.
func (c *Claim) end(ctx context.Context, why error) error {
	var err error
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		c.lostOnce.Do(func() {
			c.mu.Lock()
			rev, held := c.rev, c.err == nil && time.Now().Before(c.deadline)
			c.mu.Unlock()
			if held && c.o.b.nc.IsConnected() {
				if derr := c.o.kv.Delete(ctx, c.k, jetstream.LastRevision(rev)); derr != nil && !wrongSequence(derr) {
					err = fault.Wrap(fault.NotAvailable, derr, "release session", "%s", c.key)
				}
			}
			c.mu.Lock()
			c.err, c.ended = why, true
			c.mu.Unlock()
			close(c.lost)
			c.o.forget(c)
		})
	})
	return err
}

// PutFenced writes value under key in the lease bucket only while c holds
// its lease: the claim must not be lost, and the server checks that the
// lease is still at the claim's revision. A write refused for either
// reason is NotAvailable. It returns the write's revision. key is a
// key-value key (tokens of letters, digits, '-', '_', '/' and '=' joined
// by '.') that does not start with "lease." or "cp." — the leases' and
// the checkpoint store's — else the write is Validation.
func (o *Ownership) PutFenced(ctx context.Context, c *Claim, key string, value []byte) (uint64, error) {
	if err := validFencedKey(key); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if time.Now().After(c.deadline) {
		return 0, c.expiredErr()
	}
	return o.putAt(ctx, c.k, c.rev, key, value)
}

// putAt writes key if the lease k is at revision rev.
func (o *Ownership) putAt(ctx context.Context, k string, rev uint64, key string, value []byte) (uint64, error) {
	msg := &natsgo.Msg{Subject: o.subject(key), Data: value}
	ack, err := o.b.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequenceForSubject(rev, o.subject(k)))
	if err != nil {
		if big := o.b.oversize(err, "fenced write", key, len(value)); big != nil {
			return 0, big
		}
		if wrongSequence(err) {
			return 0, fault.Wrap(fault.NotAvailable, err, "fenced write", "%s: the lease moved", key)
		}
		return 0, fault.Wrap(fault.NotAvailable, err, "fenced write", "%s", key)
	}
	return ack.Sequence, nil
}

// validFencedKey refuses a key PutFenced must not write: one the bucket
// would not take as a key (its subject would hold a wildcard, a space or
// an empty token), or one of the keys the package keeps itself.
func validFencedKey(key string) error {
	const op = "fenced write"
	for tok := range strings.SplitSeq(key, ".") {
		if tok == "" || strings.ContainsFunc(tok, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_/=", r))
		}) {
			return fault.New(fault.Validation, op, "key %q is not a key-value key: tokens of letters, digits, '-', '_', '/' and '=' joined by '.'", key)
		}
	}
	if strings.HasPrefix(key, "lease.") || strings.HasPrefix(key, "cp.") {
		return fault.New(fault.Validation, op, "key %q is the package's own (a lease or a checkpoint entry)", key)
	}
	return nil
}
