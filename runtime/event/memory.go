package event

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
)

// ErrBusClosed is what Publish and Subscribe return after Close. It carries
// the NotAvailable kind.
var ErrBusClosed = fault.New(fault.NotAvailable, "event bus", "bus is closed")

// MemoryBus is the in-process Bus. Each subscription has its own buffered
// channel and backpressure policy; the routes of each subject are cached
// (see BusConfig.RouteCacheSize). The zero value is not usable; call
// NewMemoryBus. A MemoryBus is safe for concurrent use.
type MemoryBus struct {
	bufferSize int
	cache      *routeCache
	obs        observers
	dropped    atomic.Uint64
	closed     atomic.Bool
	closeOnce  sync.Once

	mu   sync.RWMutex
	subs []*memSub // guarded by mu; each sub knows its index
}

var (
	_ Bus       = (*MemoryBus)(nil)
	_ io.Closer = (*MemoryBus)(nil)
)

// NewMemoryBus returns an open in-memory bus with the zero BusConfig.
func NewMemoryBus() *MemoryBus { return NewMemoryBusWithConfig(BusConfig{}) }

// NewMemoryBusWithConfig returns an open in-memory bus configured by cfg.
func NewMemoryBusWithConfig(cfg BusConfig) *MemoryBus {
	buffer := cfg.DefaultBufferSize
	if buffer <= 0 || buffer > MaxBufferSize {
		buffer = DefaultBufferSize
	}
	cache := cfg.RouteCacheSize
	switch {
	case cache == 0:
		cache = DefaultRouteCacheSize
	case cache < 0:
		cache = 0
	}
	return &MemoryBus{bufferSize: buffer, cache: newRouteCache(cache)}
}

// Publish queues env for every subscription whose pattern matches its
// subject, applying each subscription's predicate and backpressure policy,
// and returns when every one has it queued or dropped. A missing ID or Time
// is filled in. A nil ctx or an invalid subject is a Validation error;
// after Close it returns ErrBusClosed. When a Block subscription's buffer is
// full, Publish waits for room; if ctx ends first it still offers env to the
// remaining subscriptions and then returns ctx's error (Aborted or Timeout).
func (b *MemoryBus) Publish(ctx context.Context, env Envelope) error {
	if b.closed.Load() {
		return ErrBusClosed
	}
	if ctx == nil {
		return fault.New(fault.Validation, "publish", "ctx must not be nil")
	}
	if err := ValidateSubject(env.Subject); err != nil {
		return err
	}
	if env.ID == "" {
		env.ID = NewID()
	}
	if env.Time.IsZero() {
		env.Time = time.Now()
	}
	subs, ok := b.route(env.Subject)
	if !ok {
		return ErrBusClosed
	}
	obs := b.obs.snapshot()
	notifyPublish(obs, env)
	var ctxErr error
	for _, s := range subs {
		if err := b.deliver(ctx, s, env, obs); err != nil && ctxErr == nil {
			ctxErr = fault.FromContext(err, "publish "+env.Subject)
		}
	}
	return ctxErr
}

// deliver offers env to one subscription and reports the outcome to the
// observers. It returns ctx's error when a Block wait was cut short.
func (b *MemoryBus) deliver(ctx context.Context, s *memSub, env Envelope, obs []*observerEntry) error {
	if s.cfg.Predicate != nil && !s.cfg.Predicate(env) {
		return nil
	}
	r := s.offer(ctx, env)
	if r.evicted {
		b.dropped.Add(1)
		notifyDrop(obs, s.pattern.raw, r.old, DropBufferFull)
	}
	switch {
	case r.err != nil:
		return r.err
	case r.drop != "":
		b.dropped.Add(1)
		notifyDrop(obs, s.pattern.raw, env, r.drop)
	default:
		notifyDeliver(obs, s.pattern.raw, env)
	}
	return nil
}

// route returns the subscriptions matching subject, from the cache when it
// can, and false when the bus is closed.
func (b *MemoryBus) route(subject string) ([]*memSub, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed.Load() {
		return nil, false
	}
	if subs, ok := b.cache.get(subject); ok {
		return subs, true
	}
	var subs []*memSub
	for _, s := range b.subs {
		if s.pattern.Match(subject) {
			subs = append(subs, s)
		}
	}
	b.cache.put(subject, subs)
	return subs, true
}

// Subscribe opens a subscription to pattern. The subscription closes when
// ctx ends, when its Close is called, or when the bus closes; then its
// channel is closed. A nil or already ended ctx, an invalid pattern
// (ErrInvalidPattern) or an invalid cfg are errors; after Close it returns
// ErrBusClosed.
func (b *MemoryBus) Subscribe(ctx context.Context, pattern string, cfg SubConfig) (Subscription, error) {
	if b.closed.Load() {
		return nil, ErrBusClosed
	}
	if ctx == nil {
		return nil, fault.New(fault.Validation, "subscribe", "ctx must not be nil")
	}
	p, err := CompilePattern(pattern)
	if err != nil {
		return nil, err
	}
	cfg, err = ResolveSubConfig(b.bufferSize, cfg)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, "subscribe "+pattern)
	}
	s := newMemSub(b, p, cfg)
	s.stop = context.AfterFunc(ctx, s.end)
	if !b.add(s) {
		s.stop()
		s.shutdown()
		return nil, ErrBusClosed
	}
	return s, nil
}

// add registers s unless the bus is closed; a subscription that already
// ended (its ctx was cancelled at once) is not registered but is returned
// as a closed subscription.
func (b *MemoryBus) add(s *memSub) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return false
	}
	if s.ending.Load() {
		return true
	}
	s.index = len(b.subs)
	b.subs = append(b.subs, s)
	b.cache.clear()
	return true
}

// remove unregisters s; removing an unregistered subscription is a no-op.
func (b *MemoryBus) remove(s *memSub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := s.index
	if i < 0 || i >= len(b.subs) || b.subs[i] != s {
		return
	}
	last := len(b.subs) - 1
	b.subs[i] = b.subs[last]
	b.subs[i].index = i
	b.subs[last] = nil
	b.subs = b.subs[:last]
	s.index = -1
	b.cache.clear()
}

// AttachObserver adds o and returns the function that removes it. A nil o
// is ignored.
func (b *MemoryBus) AttachObserver(o Observer) (detach func()) { return b.obs.add(o) }

// Dropped returns how many envelopes were dropped so far, for every
// subscription and reason together.
func (b *MemoryBus) Dropped() uint64 { return b.dropped.Load() }

// Subscriptions returns the number of open subscriptions.
func (b *MemoryBus) Subscriptions() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.subs)
}

// Close closes every subscription and makes Publish and Subscribe return
// ErrBusClosed. Publishers waiting on a Block subscription return. It is
// idempotent, and every call returns once every channel is closed.
func (b *MemoryBus) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed.Store(true)
		subs := b.subs
		for _, s := range subs {
			s.index = -1
		}
		b.subs = nil
		b.cache.clear()
		b.mu.Unlock()
		for _, s := range subs {
			s.stop()
			s.shutdown()
		}
	})
	return nil
}

// routeCache maps a subject to the subscriptions whose pattern matches it.
// The bus clears it under its write lock whenever a subscription is added or
// removed, and fills it under its read lock, so an entry never outlives the
// set of subscriptions it was computed from. Cached slices are never
// modified. A cache with max 0 is off.
type routeCache struct {
	max int
	mu  sync.Mutex
	m   map[string][]*memSub
}

func newRouteCache(max int) *routeCache {
	c := &routeCache{max: max}
	if max > 0 {
		c.m = make(map[string][]*memSub, min(max, 64))
	}
	return c
}

func (c *routeCache) get(subject string) ([]*memSub, bool) {
	if c.max == 0 {
		return nil, false
	}
	c.mu.Lock()
	subs, ok := c.m[subject]
	c.mu.Unlock()
	return subs, ok
}

// put stores subs for subject, evicting an arbitrary entry when the cache
// is full.
func (c *routeCache) put(subject string, subs []*memSub) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[subject]; !ok && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[subject] = subs
}

// clear drops every entry. The caller holds the bus's write lock.
func (c *routeCache) clear() {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

// len returns the number of cached subjects.
func (c *routeCache) len() int {
	if c.max == 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
