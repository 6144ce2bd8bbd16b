package event

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// memSub is a MemoryBus subscription.
//
// Senders hold sendMu for reading while they send, and shutdown takes it
// for writing before it closes ch, so no send can reach a closed channel.
// A Block sender waits on done as well, which shutdown closes first, so it
// never holds up the close.
type memSub struct {
	bus     *MemoryBus
	pattern Pattern
	cfg     SubConfig
	ch      chan Envelope
	done    chan struct{} // closed when the subscription ends
	ending  atomic.Bool
	stop    func() bool // stops the ctx watch; set before the sub is shared
	index   int         // position in bus.subs, guarded by bus.mu; -1 when absent

	sendMu  sync.RWMutex
	evictMu sync.Mutex // serialises DropOldest senders
	once    sync.Once
}

var _ Subscription = (*memSub)(nil)

func newMemSub(b *MemoryBus, p Pattern, cfg SubConfig) *memSub {
	return &memSub{
		bus: b, pattern: p, cfg: cfg, index: -1,
		ch:   make(chan Envelope, cfg.BufferSize),
		done: make(chan struct{}),
	}
}

func (s *memSub) C() <-chan Envelope { return s.ch }
func (s *memSub) Pattern() string    { return s.pattern.raw }

// Close ends the subscription and closes its channel. It is idempotent.
func (s *memSub) Close() error {
	s.stop()
	s.end()
	return nil
}

// end unregisters and shuts the subscription; it runs on Close and when
// the subscription's ctx ends.
func (s *memSub) end() {
	s.ending.Store(true)
	s.bus.remove(s)
	s.shutdown()
}

func (s *memSub) shutdown() {
	s.once.Do(func() {
		s.ending.Store(true)
		close(s.done)
		s.sendMu.Lock()
		close(s.ch)
		s.sendMu.Unlock()
	})
}

// offerResult is the outcome of one offer: delivered (all zero), dropped
// with a reason, or a Block wait cut short by ctx. A DropOldest offer may
// also have evicted an older envelope.
type offerResult struct {
	drop    DropReason
	err     error
	evicted bool
	old     Envelope
}

// offer queues env under the subscription's policy.
func (s *memSub) offer(ctx context.Context, env Envelope) offerResult {
	s.sendMu.RLock()
	defer s.sendMu.RUnlock()
	if s.ending.Load() {
		return offerResult{drop: DropClosed}
	}
	switch s.cfg.Backpressure {
	case Block:
		return s.offerBlock(ctx, env)
	case DropOldest:
		return s.offerEvict(env)
	case Sample:
		if s.cfg.SampleRate < 1 && rand.Float64() >= s.cfg.SampleRate {
			return offerResult{drop: DropSampled}
		}
	}
	select {
	case s.ch <- env:
		return offerResult{}
	default:
		return offerResult{drop: DropBufferFull}
	}
}

func (s *memSub) offerBlock(ctx context.Context, env Envelope) offerResult {
	select {
	case s.ch <- env:
		return offerResult{}
	default:
	}
	select {
	case s.ch <- env:
		return offerResult{}
	case <-s.done:
		return offerResult{drop: DropClosed}
	case <-ctx.Done():
		return offerResult{err: ctx.Err()}
	}
}

// offerEvict makes room by evicting the oldest buffered envelope. Only one
// DropOldest sender runs at a time, so after one eviction there is room.
func (s *memSub) offerEvict(env Envelope) offerResult {
	s.evictMu.Lock()
	defer s.evictMu.Unlock()
	var r offerResult
	for {
		select {
		case s.ch <- env:
			return r
		default:
		}
		select {
		case old := <-s.ch:
			if !r.evicted {
				r.evicted, r.old = true, old
			}
		default:
		}
	}
}
