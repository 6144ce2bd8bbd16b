package nats

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/nats-io/nats.go/jetstream"
)

// HeaderCursor is the header that carries an envelope's cursor on a
// CursorSubscription: its sequence in the event stream, in decimal.
const HeaderCursor = "event_cursor"

// CursorSubscription reads the durable events of a pattern from the
// stream, from a cursor on, then follows the stream as it grows. It is an
// event.Subscription, whose envelopes carry HeaderCursor. It survives a
// lost connection: when the client reconnects (to the same server or
// another of the cluster) it resumes after the last envelope it
// delivered, so nothing is lost or repeated.
type CursorSubscription struct {
	b       *Bus
	pattern string
	ch      chan event.Envelope
	cons    jetstream.Consumer
	iter    jetstream.MessagesContext
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

var _ event.Subscription = (*CursorSubscription)(nil)

// SubscribeFrom subscribes to the durable events of pattern whose cursor
// is above after (0: from the oldest event the stream keeps). Ephemeral
// events (Config.Ephemeral) are not in the stream and never reach it.
// The subscription reads at its reader's pace: the stream holds what is
// not read yet, so cfg's backpressure policy never drops anything;
// cfg.Predicate and cfg.BufferSize apply. It closes when ctx ends, when
// Close is called, or when the bus closes.
func (b *Bus) SubscribeFrom(ctx context.Context, pattern string, after uint64, cfg event.SubConfig) (*CursorSubscription, error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "subscribe from", "ctx must not be nil")
	}
	if b.closed.Load() {
		return nil, event.ErrBusClosed
	}
	if err := event.ValidatePattern(pattern); err != nil {
		return nil, err
	}
	cfg, err := event.ResolveSubConfig(b.cfg.Bus.DefaultBufferSize, cfg)
	if err != nil {
		return nil, err
	}
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: []string{b.durablePrefix() + pattern}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cons, err := b.js.OrderedConsumer(ctx, b.cfg.Stream, occ)
	if err != nil {
		return nil, fault.Wrap(fault.NotAvailable, err, "subscribe from", "%q after %d", pattern, after)
	}
	iter, err := cons.Messages()
	if err != nil {
		return nil, fault.Wrap(fault.NotAvailable, err, "subscribe from", "%q after %d", pattern, after)
	}
	s := &CursorSubscription{b: b, pattern: pattern, ch: make(chan event.Envelope, cfg.BufferSize),
		cons: cons, iter: iter, stop: make(chan struct{}), done: make(chan struct{})}
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		s.stopConsumer()
		return nil, event.ErrBusClosed
	}
	b.cursors[s] = struct{}{}
	b.mu.Unlock()
	go s.read(cfg.Predicate)
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// read delivers the stream's messages in order until the subscription
// stops.
func (s *CursorSubscription) read(keep func(event.Envelope) bool) {
	defer close(s.done)
	defer close(s.ch)
	for {
		msg, err := s.iter.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			// the ordered consumer recreates itself after the last
			// delivered message; an error it could not get past (the
			// stream is gone, say) is tried again, not in a tight loop
			select {
			case <-s.stop:
				return
			case <-time.After(retryPause):
				continue
			}
		}
		meta, err := msg.Metadata()
		env, ok := s.b.decode(msg.Subject(), msg.Data())
		if err != nil || !ok {
			s.b.invalid.Add(1)
			continue
		}
		env = env.WithHeader(HeaderCursor, strconv.FormatUint(meta.Sequence.Stream, 10))
		if keep != nil && !keep(env) {
			continue
		}
		select {
		case s.ch <- env:
		case <-s.stop:
			return
		}
	}
}

// retryPause is the wait before a cursor subscription asks again for a
// message after an error.
const retryPause = 100 * time.Millisecond

// C delivers the envelopes in stream order; it is closed when the
// subscription ends.
func (s *CursorSubscription) C() <-chan event.Envelope { return s.ch }

// Pattern returns the pattern the subscription was opened with.
func (s *CursorSubscription) Pattern() string { return s.pattern }

// Close ends the subscription and waits until its channel is closed. It
// is idempotent.
func (s *CursorSubscription) Close() error {
	s.once.Do(func() {
		close(s.stop)
		s.stopConsumer()
		s.b.mu.Lock()
		delete(s.b.cursors, s)
		s.b.mu.Unlock()
	})
	<-s.done
	return nil
}

// stopConsumer stops reading and deletes the subscription's consumer
// from the server, which would otherwise keep it (and its goroutines and
// state) until it had been idle for minutes. Best effort: a consumer that
// cannot be deleted now (the connection is away) is left to the server.
func (s *CursorSubscription) stopConsumer() {
	s.iter.Stop()
	info := s.cons.CachedInfo()
	if info == nil || !s.b.nc.IsConnected() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeRelease)
	defer cancel()
	_ = s.b.js.DeleteConsumer(ctx, s.b.cfg.Stream, info.Name)
}

// Cursor returns the cursor an envelope of a CursorSubscription carries,
// and whether it carries one.
func Cursor(env event.Envelope) (uint64, bool) {
	v, err := strconv.ParseUint(env.Header(HeaderCursor), 10, 64)
	return v, err == nil && v > 0
}
