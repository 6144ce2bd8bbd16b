package event

import (
	"errors"
	"io"
	"reflect"
	"slices"
	"sync"

	"github.com/corral-rt/corral/fault"
)

// ErrRouterClosed is what AddBus and Attach return after Close. It carries
// the NotAvailable kind.
var ErrRouterClosed = fault.New(fault.NotAvailable, "event router", "router is closed")

// errDetached is the cancel cause of an attachment ended by its detach
// function or by Router.Close.
var errDetached = errors.New("detached")

// Router fans sinks in over several buses. An attachment subscribes its
// pattern on every bus the router has and on every bus added later, and one
// goroutine per attachment calls its sink in order. The router does not own
// its buses: RemoveBus and Close end the router's subscriptions on them but
// never close a bus. The zero value is not usable; call NewRouter. A Router
// is safe for concurrent use.
type Router struct {
	defaultBackpressure Backpressure
	wg                  sync.WaitGroup
	closeOnce           sync.Once

	mu     sync.Mutex
	closed bool
	buses  []Bus
	atts   map[*attachment]struct{}
}

var _ io.Closer = (*Router)(nil)

// RouterConfig configures NewRouterWithConfig. The zero value is what
// NewRouter uses.
type RouterConfig struct {
	// DefaultAttachBackpressure is the policy of attachments that do not
	// choose one (WithAttachBackpressure). The zero value, and any invalid
	// policy, is DropNewest.
	DefaultAttachBackpressure Backpressure
}

// NewRouter returns an open router with no buses and the zero
// RouterConfig.
func NewRouter() *Router { return NewRouterWithConfig(RouterConfig{}) }

// NewRouterWithConfig returns an open router with no buses configured by
// cfg.
func NewRouterWithConfig(cfg RouterConfig) *Router {
	r := &Router{defaultBackpressure: cfg.DefaultAttachBackpressure, atts: map[*attachment]struct{}{}}
	if !r.defaultBackpressure.Valid() {
		r.defaultBackpressure = DropNewest
	}
	return r
}

// AddBus adds bus and subscribes every current attachment on it. It is
// all-or-nothing: if one subscription fails, those already made on bus are
// closed and the error is returned. A nil or uncomparable bus is a
// Validation error, a bus already added is a Conflict, and after Close it
// returns ErrRouterClosed.
func (r *Router) AddBus(bus Bus) error {
	if bus == nil || !reflect.TypeOf(bus).Comparable() {
		return fault.New(fault.Validation, "add bus", "bus must be a non-nil comparable value")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrRouterClosed
	}
	if slices.Contains(r.buses, bus) {
		return fault.New(fault.Conflict, "add bus", "the bus is already added")
	}
	made := make(map[*attachment]Subscription, len(r.atts))
	for a := range r.atts {
		if a.ctx.Err() != nil {
			continue // ending; its goroutine is cleaning up
		}
		sub, err := a.subscribe(bus)
		if err != nil && a.ctx.Err() != nil {
			continue
		}
		if err != nil {
			for _, s := range made {
				_ = s.Close()
			}
			return fault.Wrap(fault.KindOr(err, fault.Internal), err, "add bus", "subscribe %q", a.pattern)
		}
		made[a] = sub
	}
	r.buses = append(r.buses, bus)
	for a, sub := range made {
		a.subs[bus] = sub
		a.notify()
	}
	return nil
}

// RemoveBus closes the router's subscriptions on bus and forgets it. The
// bus itself stays open. Envelopes the bus had already queued for an
// attachment are still delivered to it, in order, before the attachment
// goes on. Removing an unknown bus is a no-op.
func (r *Router) RemoveBus(bus Bus) {
	if bus == nil || !reflect.TypeOf(bus).Comparable() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.buses, bus)
	if i < 0 {
		return
	}
	r.buses = slices.Delete(r.buses, i, i+1)
	for a := range r.atts {
		if sub, ok := a.subs[bus]; ok {
			delete(a.subs, bus)
			_ = sub.Close()
			a.removed = append(a.removed, sub)
			a.notify()
		}
	}
}

// Buses returns the number of buses the router routes from.
func (r *Router) Buses() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.buses)
}

// Attachments returns the number of live attachments.
func (r *Router) Attachments() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.atts)
}

// Close ends every attachment and waits for their goroutines, including a
// sink call in flight (its ctx is cancelled). It does not close the buses.
// It is idempotent; every call waits. It must not be called from a sink or
// an OnDetach function, whose goroutine it would wait for.
func (r *Router) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		atts := make([]*attachment, 0, len(r.atts))
		for a := range r.atts {
			atts = append(atts, a)
		}
		r.mu.Unlock()
		for _, a := range atts {
			a.cancel(errDetached)
		}
	})
	r.wg.Wait()
	return nil
}
