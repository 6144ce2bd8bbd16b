package session

import (
	"context"
	"log/slog"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// AgentResolver finds the bound agent for an id. A deploy.Result is one.
type AgentResolver interface {
	Agent(id string) (*agent.Agent, bool)
}

// CatalogProvider builds the per-session tool catalog. It is called the
// first time a session starts a turn in each epoch; the value is reachable
// by engines through the host capability CatalogHost.
type CatalogProvider func(ctx context.Context, key Key) (any, error)

// CatalogHost is the host capability that exposes the session's tool
// catalog to engines.
type CatalogHost interface {
	SessionCatalog() any
}

// Deps is a consistent snapshot of what turns run against: one epoch.
// Resolver, HostFactory and Bus are required.
type Deps struct {
	Resolver        AgentResolver
	HostFactory     HostFactory
	Bus             event.Bus // prompts are published here and turn streams subscribe here
	CatalogProvider CatalogProvider
	Checkpoints     agent.CheckpointStore // nil: no history, no resume
	Resume          bool                  // requires Checkpoints to be an agent.CheckpointDeleter
	Epoch           uint64
}

func (d Deps) validate(op string) error {
	switch {
	case d.Resolver == nil || agent.IsNil(d.Resolver):
		return fault.New(fault.Validation, op, "deps: resolver is required")
	case d.HostFactory == nil:
		return fault.New(fault.Validation, op, "deps: host factory is required")
	case d.Bus == nil || agent.IsNil(d.Bus):
		return fault.New(fault.Validation, op, "deps: bus is required")
	}
	if d.Resume {
		if d.Checkpoints == nil || agent.IsNil(d.Checkpoints) {
			return fault.New(fault.Validation, op, "resume requires a checkpoint store")
		}
		if _, ok := d.Checkpoints.(agent.CheckpointDeleter); !ok {
			return fault.New(fault.Validation, op, "resume requires a checkpoint store that implements agent.CheckpointDeleter")
		}
	}
	return nil
}

// Tunables are the manager's limits. Every field must be > 0. IdleTimeout
// and MaxSessions apply at once when updated; the others apply to sessions
// created afterwards.
type Tunables struct {
	IdleTimeout             time.Duration
	MaxSessions             int
	SinkBuffer              int
	DeliveryConcurrency     int
	SpeculativeBufferEvents int
	SpeculativeBufferBytes  int
}

// DefaultTunables returns the defaults of the runtime: section.
func DefaultTunables() Tunables {
	return Tunables{
		IdleTimeout:             10 * time.Minute,
		MaxSessions:             1024,
		SinkBuffer:              256,
		DeliveryConcurrency:     8,
		SpeculativeBufferEvents: 1024,
		SpeculativeBufferBytes:  1 << 20,
	}
}

// Validate checks that every field is positive.
func (t Tunables) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"idle timeout", int64(t.IdleTimeout)}, {"max sessions", int64(t.MaxSessions)},
		{"sink buffer", int64(t.SinkBuffer)}, {"delivery concurrency", int64(t.DeliveryConcurrency)},
		{"speculative buffer events", int64(t.SpeculativeBufferEvents)},
		{"speculative buffer bytes", int64(t.SpeculativeBufferBytes)},
	} {
		if f.v <= 0 {
			return fault.New(fault.Validation, "session tunables", "%s must be > 0, got %d", f.name, f.v)
		}
	}
	return nil
}

// Option configures a Manager.
type Option func(*managerConfig) error

type managerConfig struct {
	tun          Tunables
	observers    []SessionObserver
	logger       *slog.Logger
	closeTimeout time.Duration
	finalize     time.Duration
	store        *agent.CheckpointStore
	resume       *bool
	catalog      CatalogProvider
}

func positive(name string, v int64) error {
	if v <= 0 {
		return fault.New(fault.Validation, "session option", "%s must be > 0, got %d", name, v)
	}
	return nil
}

// WithIdleTimeout sets how long an idle, unleased session is kept.
func WithIdleTimeout(d time.Duration) Option {
	return func(c *managerConfig) error { c.tun.IdleTimeout = d; return positive("idle timeout", int64(d)) }
}

// WithSinkBufferSize sets the default per-sink queue size.
func WithSinkBufferSize(n int) Option {
	return func(c *managerConfig) error { c.tun.SinkBuffer = n; return positive("sink buffer", int64(n)) }
}

// WithDeliveryConcurrency caps concurrent OnDelta calls per sink.
func WithDeliveryConcurrency(n int) Option {
	return func(c *managerConfig) error {
		c.tun.DeliveryConcurrency = n
		return positive("delivery concurrency", int64(n))
	}
}

// WithMaxSessions caps the live session entries.
func WithMaxSessions(n int) Option {
	return func(c *managerConfig) error { c.tun.MaxSessions = n; return positive("max sessions", int64(n)) }
}

// WithSpeculativeBufferLimits bounds the confirmed stream's speculative
// buffer.
func WithSpeculativeBufferLimits(events, bytes int) Option {
	return func(c *managerConfig) error {
		c.tun.SpeculativeBufferEvents, c.tun.SpeculativeBufferBytes = events, bytes
		if err := positive("speculative buffer events", int64(events)); err != nil {
			return err
		}
		return positive("speculative buffer bytes", int64(bytes))
	}
}

// WithCheckpointStore sets the store of the first epoch (overrides
// Deps.Checkpoints).
func WithCheckpointStore(s agent.CheckpointStore) Option {
	return func(c *managerConfig) error {
		if s == nil || agent.IsNil(s) {
			return fault.New(fault.Validation, "session option", "checkpoint store must not be nil")
		}
		c.store = &s
		return nil
	}
}

// WithResume turns durable session state on or off for the first epoch
// (overrides Deps.Resume).
func WithResume(on bool) Option {
	return func(c *managerConfig) error { c.resume = &on; return nil }
}

// WithSessionObserver adds an observer of session lifecycle events.
func WithSessionObserver(o SessionObserver) Option {
	return func(c *managerConfig) error {
		if o == nil || agent.IsNil(o) {
			return fault.New(fault.Validation, "session option", "observer must not be nil")
		}
		c.observers = append(c.observers, o)
		return nil
	}
}

// WithCatalogProvider sets the per-session tool catalog provider of the
// first epoch (overrides Deps.CatalogProvider).
func WithCatalogProvider(p CatalogProvider) Option {
	return func(c *managerConfig) error {
		if p == nil {
			return fault.New(fault.Validation, "session option", "catalog provider must not be nil")
		}
		c.catalog = p
		return nil
	}
}

// WithLogger sets the logger for warnings (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *managerConfig) error {
		if l == nil {
			return fault.New(fault.Validation, "session option", "logger must not be nil")
		}
		c.logger = l
		return nil
	}
}

// WithCloseTimeout sets how long Close waits for each session's turn to
// stop (default 30 s).
func WithCloseTimeout(d time.Duration) Option {
	return func(c *managerConfig) error { c.closeTimeout = d; return positive("close timeout", int64(d)) }
}

// WithFinalizeBudget sets how long a finishing turn waits for the engine's
// run-end events before it detaches the sinks (default 5 s).
func WithFinalizeBudget(d time.Duration) Option {
	return func(c *managerConfig) error { c.finalize = d; return positive("finalize budget", int64(d)) }
}

// SessionObserver sees session lifecycle events. Callbacks must not block
// for long and must not call back into the manager, the session or the
// turn synchronously (OnTurnFinished runs before the turn's Wait returns;
// a Wait inside it would never return). For one session, OnSessionStarted
// comes before its turn's OnTurnFinished, OnSessionClosing comes once, and
// OnSessionClosed comes last. When Close stops a running turn,
// OnSessionClosing comes first, then that turn's OnTurnFinished, then
// OnSessionClosed (REF 2.8.8). Several observers are called in the
// order they were added.
type SessionObserver interface {
	OnSessionStarted(s *Session, t *Turn)
	OnSessionClosing(s *Session)
	OnSessionClosed(s *Session, err error)
	OnTurnFinished(s *Session, t *Turn, res *agent.Result, err error)
}

// ObserverFuncs adapts functions to a SessionObserver; nil fields are
// skipped.
type ObserverFuncs struct {
	Started      func(s *Session, t *Turn)
	Closing      func(s *Session)
	Closed       func(s *Session, err error)
	TurnFinished func(s *Session, t *Turn, res *agent.Result, err error)
}

var _ SessionObserver = ObserverFuncs{}

func (o ObserverFuncs) OnSessionStarted(s *Session, t *Turn) {
	if o.Started != nil {
		o.Started(s, t)
	}
}

func (o ObserverFuncs) OnSessionClosing(s *Session) {
	if o.Closing != nil {
		o.Closing(s)
	}
}

func (o ObserverFuncs) OnSessionClosed(s *Session, err error) {
	if o.Closed != nil {
		o.Closed(s, err)
	}
}

func (o ObserverFuncs) OnTurnFinished(s *Session, t *Turn, res *agent.Result, err error) {
	if o.TurnFinished != nil {
		o.TurnFinished(s, t, res, err)
	}
}
