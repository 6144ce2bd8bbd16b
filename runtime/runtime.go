package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
)

// ErrClosed is returned by Runtime methods called after Close.
var ErrClosed = fault.New(fault.NotAvailable, "runtime", "runtime is closed")

// ErrDraining is returned by RegisterAgent and Reload once Drain was called
// (REF 1.9.6).
var ErrDraining = fault.New(fault.NotAvailable, "runtime", "runtime draining")

// publishTimeout bounds a best-effort runtime event publish.
const publishTimeout = 5 * time.Second

// Runtime owns one built deployment (a generation), its event router and
// its sessions. Build one with NewBuilder(reg).Build(ctx, doc); Close it
// when done. A Runtime is safe for concurrent use.
type Runtime struct {
	reg            *resource.Registry
	loader         resource.Loader
	hostDecorator  HostDecorator
	resultDecorate ResultHostDecorator
	external       map[string]ExternalResource
	router         *event.Router
	// events is the runtime's own bus, for its lifecycle events (rebuild,
	// agent registered and removed): the router holds it for the
	// runtime's whole life, so that one attachment sees them in the order
	// they were published, across reloads that replace the document's bus.
	events   *event.MemoryBus
	sessions *session.Manager

	// lifecycle serializes Close, Drain, Reload, RegisterAgent and
	// UnregisterAgent (REF 1.9.5, 1.10.1, 1.11.3).
	lifecycle sync.Mutex

	mu      sync.RWMutex // guards gen, nextGen and closed
	gen     *generation
	nextGen uint64
	closed  bool

	closeOnce sync.Once
	closeErr  error
}

// GenerationID returns the id of the generation now serving; the first is
// 1 (REF 1.3.9).
func (rt *Runtime) GenerationID() uint64 {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.gen.id
}

// current returns the serving generation, or nil after Close.
func (rt *Runtime) current() *generation {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	if rt.closed {
		return nil
	}
	return rt.gen
}

// usable refuses a lifecycle operation after Close and, when
// refuseDraining, once Drain was called. The caller holds the lifecycle
// lock, so the answer holds until it lets go.
func (rt *Runtime) usable(op string, refuseDraining bool) error {
	rt.mu.RLock()
	closed := rt.closed
	rt.mu.RUnlock()
	switch {
	case closed:
		return fmt.Errorf("%s: %w", op, ErrClosed)
	case refuseDraining && rt.sessions.Draining():
		return fmt.Errorf("%s: %w", op, ErrDraining)
	}
	return nil
}

// publish sends a runtime lifecycle event on the runtime's own bus (see
// Runtime.events), best-effort: it is bounded by
// publishTimeout, survives the caller's cancellation, and a failure is
// only logged (REF 1.10.8, 1.11.13).
func (rt *Runtime) publish(ctx context.Context, subject string, payload any) {
	bus := rt.events
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	env, err := event.NewEnvelope(ctx, subject, payload)
	if err == nil {
		err = bus.Publish(ctx, env)
	}
	if err != nil {
		slog.Default().Debug("runtime event not published", "subject", subject, "error", err)
	}
}

// Config returns the decoded runtime: section of the serving generation.
func (rt *Runtime) Config() Config {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.gen.cfg
}

// Resource lends the value built for the resource name in the serving
// generation (REF 1.6). The runtime keeps owning it: do not close it,
// and do not keep it past a Reload or Close. External dependencies are not
// resources and are not returned.
func (rt *Runtime) Resource(name string) (any, bool) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	if rt.closed {
		return nil, false
	}
	return rt.gen.result.Value(name)
}

// Attach subscribes sink to every event matching pattern on the runtime's
// router, across every generation's bus, without resolving the event_bus
// resource (REF 1.5). The attachment uses DropNewest unless
// event.WithAttachBackpressure says otherwise. It ends when detach is
// called, ctx ends, sink returns an error, or the runtime closes.
func (rt *Runtime) Attach(ctx context.Context, pattern string, sink event.Sink, opts ...event.AttachOption) (detach func(), err error) {
	switch {
	case rt == nil:
		return nil, fault.New(fault.Validation, "attach", "runtime must not be nil")
	case ctx == nil:
		return nil, fault.New(fault.Validation, "attach", "ctx must not be nil")
	case sink == nil:
		return nil, fault.New(fault.Validation, "attach", "sink must not be nil")
	}
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	if rt.closed {
		return nil, ErrClosed
	}
	return rt.router.Attach(ctx, pattern, sink, opts...)
}

// Sessions returns the session manager. After Close its Open returns
// session.ErrManagerClosed (NotAvailable).
func (rt *Runtime) Sessions() *session.Manager { return rt.sessions }

// Drain quiesces the runtime before it is replaced (REF 1.9): new
// leases and new turns are refused with session.ErrManagerDraining, and
// Drain waits, bounded by ctx, until no session has an active turn. It never
// interrupts a turn. The runtime stays draining even when ctx ends first; a
// repeated Drain returns nil once idle. After Close it returns ErrClosed.
func (rt *Runtime) Drain(ctx context.Context) error {
	if ctx == nil {
		return fault.New(fault.Validation, "drain", "ctx must not be nil")
	}
	rt.lifecycle.Lock()
	defer rt.lifecycle.Unlock()
	if err := rt.usable("drain", false); err != nil {
		return err
	}
	return rt.sessions.Drain(ctx)
}

// Close releases the runtime (REF 1.4): the sessions, then the
// router's attachments, then the generation's resources in reverse build
// order and its agents. Caller-owned external values are not closed. Close
// is idempotent; every caller gets the same joined error.
func (rt *Runtime) Close() error {
	rt.closeOnce.Do(func() {
		rt.lifecycle.Lock()
		defer rt.lifecycle.Unlock()
		rt.mu.Lock()
		rt.closed = true
		gen := rt.gen
		rt.mu.Unlock()
		rt.closeErr = errors.Join(rt.sessions.Close(), rt.router.Close(), gen.close(), rt.events.Close())
	})
	return rt.closeErr
}
