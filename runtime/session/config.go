package session

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
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
	Ownership       Ownership             // who runs a key's turns across nodes; nil: LocalOwnership
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

// Tunables are the manager's limits: the keys of the runtime.sessions
// section of a deployment document (REF 1.1), decoded straight into this
// type. UpdateTunables takes only positive values; in a Config a zero
// field takes its DefaultTunables value. IdleTimeout and MaxSessions apply
// at once when updated; the others apply to sessions created afterwards.
type Tunables struct {
	// IdleTimeout is how long an idle, unleased session is kept.
	IdleTimeout time.Duration `json:"idle_timeout"`
	// MaxSessions caps the live session entries; an Open past it evicts
	// the session idle the longest before it refuses (REF 2.1.8).
	MaxSessions int `json:"max_sessions"`
	// SinkBuffer is the queue size of a sink whose QueueSize is 0.
	SinkBuffer int `json:"sink_buffer"`
	// DeliveryConcurrency caps the OnDelta calls of one sink in flight.
	DeliveryConcurrency int `json:"delivery_concurrency"`
	// SpeculativeBufferEvents bounds the held speculative deltas (and
	// branch states) of the confirmed stream.
	SpeculativeBufferEvents int `json:"speculative_buffer_events"`
	// SpeculativeBufferBytes bounds the payload bytes of the held
	// speculative deltas.
	SpeculativeBufferBytes int `json:"speculative_buffer_bytes"`
}

// DefaultTunables returns the defaults of the runtime.sessions section, the
// only definition of them: idle timeout 10 min, 1024 sessions, sink buffer
// 256, delivery concurrency 8, speculative buffer 1024 events and 1 MiB.
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
	for _, f := range t.fields() {
		if f.v <= 0 {
			return fault.New(fault.Validation, "session tunables", "%s must be > 0, got %d", f.name, f.v)
		}
	}
	return nil
}

// orDefaults returns t with every zero field set to its default.
func (t Tunables) orDefaults() Tunables {
	d := DefaultTunables()
	t.IdleTimeout = cmp.Or(t.IdleTimeout, d.IdleTimeout)
	t.MaxSessions = cmp.Or(t.MaxSessions, d.MaxSessions)
	t.SinkBuffer = cmp.Or(t.SinkBuffer, d.SinkBuffer)
	t.DeliveryConcurrency = cmp.Or(t.DeliveryConcurrency, d.DeliveryConcurrency)
	t.SpeculativeBufferEvents = cmp.Or(t.SpeculativeBufferEvents, d.SpeculativeBufferEvents)
	t.SpeculativeBufferBytes = cmp.Or(t.SpeculativeBufferBytes, d.SpeculativeBufferBytes)
	return t
}

func (t Tunables) fields() []struct {
	name string
	v    int64
} {
	return []struct {
		name string
		v    int64
	}{
		{"idle timeout", int64(t.IdleTimeout)}, {"max sessions", int64(t.MaxSessions)},
		{"sink buffer", int64(t.SinkBuffer)}, {"delivery concurrency", int64(t.DeliveryConcurrency)},
		{"speculative buffer events", int64(t.SpeculativeBufferEvents)},
		{"speculative buffer bytes", int64(t.SpeculativeBufferBytes)},
	}
}

// Defaults of the manager's own settings and of a sink's delivery timeout.
const (
	defaultCloseTimeout    = 30 * time.Second
	defaultFinalizeBudget  = 5 * time.Second
	defaultDeliveryTimeout = 30 * time.Second
)

// Config configures NewManagerWithConfig. The zero value is what
// NewManager uses: DefaultTunables, no observers, slog.Default(), a close
// timeout of 30 s and a finalize budget of 5 s.
type Config struct {
	// Tunables are the manager's first limits (UpdateTunables replaces
	// them). A zero field takes its DefaultTunables value; a negative one
	// is a Validation error.
	Tunables Tunables
	// Observers see session lifecycle events, called in order. A nil entry
	// is a Validation error. nil: none.
	Observers []SessionObserver
	// Logger gets the manager's warnings. nil: slog.Default().
	Logger *slog.Logger
	// CloseTimeout is how long Close waits for each session's turn to
	// stop. 0: 30 s; negative: a Validation error.
	CloseTimeout time.Duration
	// FinalizeBudget is how long a finishing turn waits for the engine's
	// run-end events before it detaches the sinks. 0: 5 s; negative: a
	// Validation error.
	FinalizeBudget time.Duration
	// Quotas bound each tenant's agents, by tenant id (an agent's
	// Definition.TenantID; UpdateQuotas replaces them). A tenant without an
	// entry is bounded only by Tunables. A negative bound is a Validation
	// error.
	Quotas map[string]Quotas
	// Clock tells the time of the tenants' per-minute rates. nil: time.Now.
	Clock func() time.Time
}

// resolve fills in the defaults and checks what remains.
func (c Config) resolve() (Config, error) {
	const op = "new session manager"
	c.Tunables = c.Tunables.orDefaults()
	if err := c.Tunables.Validate(); err != nil {
		return c, err
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"close timeout", &c.CloseTimeout, defaultCloseTimeout}, {"finalize budget", &c.FinalizeBudget, defaultFinalizeBudget}} {
		if *d.v < 0 {
			return c, fault.New(fault.Validation, op, "%s must not be negative, got %s", d.name, *d.v)
		}
		*d.v = cmp.Or(*d.v, d.def)
	}
	c.Observers = slices.Clone(c.Observers)
	for i, o := range c.Observers {
		if o == nil || agent.IsNil(o) {
			return c, fault.New(fault.Validation, op, "observers[%d] must not be nil", i)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	var err error
	c.Quotas, err = checkQuotas(c.Quotas)
	return c, err
}

// checkQuotas copies quotas, refusing a negative bound.
func checkQuotas(quotas map[string]Quotas) (map[string]Quotas, error) {
	out := make(map[string]Quotas, len(quotas))
	for tenant, q := range quotas {
		if err := q.Validate(); err != nil {
			return nil, fault.Wrap(fault.Validation, err, "quotas", "tenant %q", tenant)
		}
		out[tenant] = q
	}
	return out, nil
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
