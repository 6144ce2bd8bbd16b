package nats

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bus is the event.Bus of a node that shares its events with other nodes
// through NATS. Subscriptions are local to the node: they receive what
// this node publishes exactly as a MemoryBus delivers it (before Publish
// returns, under each subscription's backpressure policy) and what other
// nodes publish as it arrives. Durable events go to a JetStream stream and
// can be read again from a cursor (SubscribeFrom); ephemeral ones (the
// stream deltas, by default) go over core NATS. Bus is safe for
// concurrent use.
type Bus struct {
	cfg   Config
	local *event.MemoryBus
	nc    *natsgo.Conn
	js    jetstream.JetStream
	eph   []event.Pattern

	ctx    context.Context // ends when the bus closes
	cancel context.CancelFunc
	in     *natsgo.Subscription
	inDone chan struct{}

	seen     *idWindow     // the ids of the last durable events received; the inbound goroutine's
	invalid  atomic.Uint64 // inbound messages that were not envelopes
	closed   atomic.Bool
	mu       sync.Mutex // guards cursors
	cursors  map[*CursorSubscription]struct{}
	once     sync.Once
	closeErr error
	own      *Ownership
}

var _ event.Bus = (*Bus)(nil)

// The NATS subject of an event is the prefix, "ev" for a durable event or
// "eph" for an ephemeral one, then the event's subject: the grammars are
// the same, so a pattern maps the same way.
func (b *Bus) durablePrefix() string   { return b.cfg.SubjectPrefix + ".ev." }
func (b *Bus) ephemeralPrefix() string { return b.cfg.SubjectPrefix + ".eph." }

// Ephemeral reports whether events on subject go over core NATS.
func (b *Bus) Ephemeral(subject string) bool {
	for _, p := range b.eph {
		if p.Match(subject) {
			return true
		}
	}
	return false
}

// Node returns the node's name.
func (b *Bus) Node() string { return b.cfg.Node }

// Conn returns the bus's NATS connection, for tests and tools; the bus
// owns it.
func (b *Bus) Conn() *natsgo.Conn { return b.nc }

// Publish delivers env to this node's matching subscriptions as a
// MemoryBus does, then sends it to the other nodes. A durable event is
// stored in the stream and Publish waits for the stream's
// acknowledgement: an acknowledgement that does not come is asked for
// again, with the same message id so that the stream stores the event
// once, for as long as ctx lasts — or for Config.PublishTimeout when ctx
// cannot end or a Block subscription used it up — and until the bus
// closes. An ephemeral event is handed to the connection. A failure to
// send is NotAvailable, returned after the local delivery; after Close,
// or when the bus closes while Publish waits, it returns ErrBusClosed.
func (b *Bus) Publish(ctx context.Context, env event.Envelope) error {
	if b.closed.Load() {
		return event.ErrBusClosed
	}
	if ctx == nil {
		return fault.New(fault.Validation, "publish", "ctx must not be nil")
	}
	if err := event.ValidateSubject(env.Subject); err != nil {
		return err
	}
	if env.Time.IsZero() {
		env.Time = time.Now()
	}
	if env.ID == "" {
		env.ID = event.NewIDAt(env.Time)
	}
	localErr := b.local.Publish(ctx, env)
	if errors.Is(localErr, event.ErrBusClosed) {
		return localErr
	}
	if err := b.lostClaim(ctx); err != nil {
		return errors.Join(localErr, fault.Wrap(fault.NotAvailable, err, "publish", "%q not sent to the other nodes", env.Subject))
	}
	sendErr := b.send(ctx, env)
	if sendErr != nil && b.closed.Load() {
		return event.ErrBusClosed // the bus closed while the publish waited
	}
	return errors.Join(localErr, sendErr)
}

// lostClaim returns why the session claim ctx carries (a turn's) is lost,
// or nil. The events of a turn whose claim is lost — a node that stalled
// past its lease while another took the key over, whose turn is being
// stopped — stay on the node: the other nodes and the stream do not get
// them. A check on this node only: an event sent just before a stall
// still goes out once the node wakes up.
func (b *Bus) lostClaim(ctx context.Context) error {
	sc, ok := session.ClaimFromContext(ctx)
	if !ok {
		return nil
	}
	c, ok := sc.(*Claim)
	if !ok || c.o.b.cfg.LeaseBucket != b.cfg.LeaseBucket {
		return nil
	}
	return c.Err()
}

// send publishes env to NATS.
func (b *Bus) send(ctx context.Context, env event.Envelope) error {
	data, err := json.Marshal(env)
	if err != nil {
		return fault.Wrap(fault.Validation, err, "publish", "encode %q", env.Subject)
	}
	if b.Ephemeral(env.Subject) {
		if err := b.nc.PublishMsg(b.message(b.ephemeralPrefix()+env.Subject, data)); err != nil {
			if big := b.oversize(err, "publish", env.Subject, len(data)); big != nil {
				return big
			}
			return fault.Wrap(fault.NotAvailable, err, "publish", "%q over nats", env.Subject)
		}
		return nil
	}
	pctx, cancel := b.publishContext(ctx)
	defer cancel()
	subject := b.durablePrefix() + env.Subject
	wait := publishAttempt
	for {
		// An acknowledgement that does not come (a server failing over, a
		// stream electing its leader, a server too busy to answer in
		// time) is asked for again with the same message id: the stream
		// stores an id once, so the event is neither lost nor doubled.
		actx, acancel := context.WithTimeout(pctx, wait)
		_, err := b.js.PublishMsg(actx, b.message(subject, data), jetstream.WithMsgID(env.ID))
		acancel()
		if err == nil {
			return nil
		}
		if big := b.oversize(err, "publish", env.Subject, len(data)); big != nil {
			return big // the same message cannot fit when asked again
		}
		if refused(err) {
			// The stream answered and said no (its limits, its
			// configuration): asking again gets the same answer.
			if b.closed.Load() {
				return event.ErrBusClosed
			}
			return fault.Wrap(fault.NotAvailable, err, "publish", "%q to stream %s", env.Subject, b.cfg.Stream)
		}
		b.restoreStream(pctx, err)
		if pctx.Err() != nil {
			if b.closed.Load() {
				return event.ErrBusClosed
			}
			return fault.Wrap(fault.NotAvailable, errors.Join(err, context.Cause(pctx)), "publish",
				"%q to stream %s", env.Subject, b.cfg.Stream)
		}
		select { // a refusal that came at once is not asked again in a tight loop
		case <-pctx.Done():
		case <-time.After(retryPause):
		}
		wait = min(2*wait, maxPublishAttempt)
	}
}

// publishContext bounds how long a durable publish asks for the stream's
// acknowledgement: as long as ctx lasts, or Config.PublishTimeout when
// ctx cannot end (context.WithoutCancel, Background) or a Block
// subscription already used it up; and never past the bus's Close.
func (b *Bus) publishContext(ctx context.Context) (context.Context, context.CancelFunc) {
	var cancel context.CancelFunc
	if ctx.Done() == nil || ctx.Err() != nil {
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), b.cfg.PublishTimeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	stop := context.AfterFunc(b.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// originHeader names the node that published a message. A node's live
// subscriptions take no message of its own name from NATS: the node's
// events reach them locally, and the bus of another generation of the same
// node (a reload builds a new bus beside the old one) delivers its own.
const originHeader = "Corral-Node"

func (b *Bus) message(subject string, data []byte) *natsgo.Msg {
	return &natsgo.Msg{Subject: subject, Data: data, Header: natsgo.Header{originHeader: []string{b.cfg.Node}}}
}

// publishAttempt bounds the first wait for the stream's
// acknowledgement; each next attempt waits twice as long, up to
// maxPublishAttempt.
const (
	publishAttempt    = time.Second
	maxPublishAttempt = 8 * time.Second
)

// Subscribe subscribes to pattern on this node: the events this node
// publishes and those the other nodes publish, durable and ephemeral
// alike, from now on. cfg works as on a MemoryBus, with what a network
// adds (docs/distributed.md): Block holds up the delivery of every other
// node's events to this node while it waits, never another node's
// publisher.
func (b *Bus) Subscribe(ctx context.Context, pattern string, cfg event.SubConfig) (event.Subscription, error) {
	if b.closed.Load() {
		return nil, event.ErrBusClosed
	}
	return b.local.Subscribe(ctx, pattern, cfg)
}

// AttachObserver observes this node's publishes, deliveries and drops; an
// event from another node counts as a publish when it arrives.
func (b *Bus) AttachObserver(o event.Observer) (detach func()) { return b.local.AttachObserver(o) }

// Dropped counts the envelopes that did not reach a local subscription.
func (b *Bus) Dropped() uint64 { return b.local.Dropped() }

// Invalid counts the messages on the bus's subjects that were not
// envelopes, or whose envelope named another subject; they are dropped.
func (b *Bus) Invalid() uint64 { return b.invalid.Load() }

// inboundPending bounds what the connection holds for the inbound
// subscription while a Block subscriber holds it up; past it NATS drops
// (a slow consumer).
const (
	inboundPendingMsgs  = 1 << 16
	inboundPendingBytes = 64 << 20
)

// startInbound subscribes to every event of the prefix and hands those of
// other nodes (NoEcho keeps this node's own away) to the local fan-out, in
// the order the server sent them.
func (b *Bus) startInbound() error {
	sub, err := b.nc.SubscribeSync(b.cfg.SubjectPrefix + ".>")
	if err != nil {
		return fault.Wrap(fault.NotAvailable, err, "nats connect", "subscribe %s.>", b.cfg.SubjectPrefix)
	}
	_ = sub.SetPendingLimits(inboundPendingMsgs, inboundPendingBytes)
	if err := b.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return fault.Wrap(fault.NotAvailable, err, "nats connect", "flush")
	}
	b.in = sub
	go b.inbound(sub)
	return nil
}

func (b *Bus) inbound(sub *natsgo.Subscription) {
	defer close(b.inDone)
	for {
		m, err := sub.NextMsgWithContext(b.ctx)
		switch {
		case b.ctx.Err() != nil || errors.Is(err, natsgo.ErrBadSubscription) || errors.Is(err, natsgo.ErrConnectionClosed):
			return
		case errors.Is(err, natsgo.ErrSlowConsumer): // what NATS dropped, the subscription counts
			continue
		case err != nil:
			return
		}
		if m.Header.Get(originHeader) == b.cfg.Node {
			continue // this node's own, from a bus of another generation
		}
		env, ok := b.decode(m.Subject, m.Data)
		if !ok {
			b.invalid.Add(1)
			continue
		}
		if strings.HasPrefix(m.Subject, b.durablePrefix()) && !b.seen.add(env.ID) {
			continue // a publish asked again for its acknowledgement: stored once, delivered once
		}
		_ = b.local.Publish(b.ctx, env)
	}
}

// dedupWindow is how many durable event ids a node remembers to deliver
// a retried publish once.
const dedupWindow = 4096

// idWindow remembers the last n ids added. It is not safe for concurrent
// use.
type idWindow struct {
	ids  map[string]struct{}
	ring []string
	next int
}

func newIDWindow(n int) *idWindow {
	return &idWindow{ids: make(map[string]struct{}, n), ring: make([]string, n)}
}

// add records id and reports whether it was new.
func (w *idWindow) add(id string) bool {
	if _, ok := w.ids[id]; ok {
		return false
	}
	if old := w.ring[w.next]; old != "" {
		delete(w.ids, old)
	}
	w.ring[w.next], w.ids[id] = id, struct{}{}
	w.next = (w.next + 1) % len(w.ring)
	return true
}

// RemoteDropped counts the other nodes' events NATS dropped before they
// reached this node because its local delivery fell behind (a Block
// subscriber holding it up past the inbound limits).
func (b *Bus) RemoteDropped() uint64 {
	n, _ := b.in.Dropped()
	return uint64(max(n, 0))
}

// decode turns a NATS message into its envelope; the envelope must name
// the subject the message came on.
func (b *Bus) decode(subject string, data []byte) (event.Envelope, bool) {
	var s string
	switch {
	case strings.HasPrefix(subject, b.durablePrefix()):
		s = subject[len(b.durablePrefix()):]
	case strings.HasPrefix(subject, b.ephemeralPrefix()):
		s = subject[len(b.ephemeralPrefix()):]
	default:
		return event.Envelope{}, false
	}
	var env event.Envelope
	if json.Unmarshal(data, &env) != nil || env.Subject != s || event.ValidateSubject(s) != nil {
		return event.Envelope{}, false
	}
	return env, true
}

// Close closes every subscription, stops receiving, releases the
// session leases this node holds and closes the connection. It is
// idempotent.
func (b *Bus) Close() error {
	b.once.Do(func() {
		b.closed.Store(true)
		if b.in != nil {
			_ = b.in.Unsubscribe()
		}
		if b.cancel != nil {
			b.cancel()
			<-b.inDone
		}
		b.mu.Lock()
		cursors := make([]*CursorSubscription, 0, len(b.cursors))
		for c := range b.cursors {
			cursors = append(cursors, c)
		}
		b.mu.Unlock()
		for _, c := range cursors {
			_ = c.Close()
		}
		if b.own != nil {
			b.own.close()
		}
		b.closeErr = b.local.Close()
		b.nc.Close()
	})
	return b.closeErr
}
