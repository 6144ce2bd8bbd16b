package serve

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/session"
)

// Options configure a Server. The zero value of each field is documented.
type Options struct {
	// Logger gets one structured line per refused request and per turn.
	// nil: slog.Default().
	Logger *slog.Logger
	// Metrics, when set, is served at GET /metrics without a key (mount it
	// only where the listener is trusted). nil: no /metrics.
	Metrics http.Handler
	// Middleware, when set, wraps every route (tracing, request metrics).
	// nil: none.
	Middleware func(http.Handler) http.Handler
	// OnQuotaRejected, when set, is called with the tenant and the quota's
	// key each time a request is refused by a quota. It must not block.
	OnQuotaRejected func(tenant, quota string)
	// MaxBodyBytes bounds a request body. 0: 4 MiB.
	MaxBodyBytes int64
	// MaxTurnEventBytes bounds the event log a turn keeps for its
	// streams; past it the log records one "overflow" event and no more.
	// 0: 64 MiB.
	MaxTurnEventBytes int
	// KeepTurns is how many finished turns a session keeps for reading
	// back. 0: 32.
	KeepTurns int
	// MaxWait bounds the wait of GET .../wait. 0: 5 minutes.
	MaxWait time.Duration
	// MaxTenantEventBytes bounds the event bytes a tenant's kept turns
	// hold across all its sessions: past it, the logs of the tenant's
	// oldest finished turns are freed (their streams answer 410; their
	// results stay). A turn's own log is also bounded by it. 0: 256 MiB.
	MaxTenantEventBytes int
	// MaxStreamsPerTurn bounds the event streams open on one turn at
	// once; one more is refused with 429. 0: 16.
	MaxStreamsPerTurn int
	// MaxHeldPerTenant bounds the requests of one tenant held open at
	// once waiting for a turn: waits (GET .../wait on a running turn) and
	// event streams (GET .../events). One more is refused with 429, quota
	// "held_requests" and Retry-After, until one of them ends. 0: 128.
	MaxHeldPerTenant int
	// StreamWriteTimeout bounds the write of one event to a stream's
	// client: a client that does not read for that long loses its
	// stream (it may resume with Last-Event-ID). 0: 30 seconds.
	StreamWriteTimeout time.Duration
	// BodyReadTimeout bounds the reading of a request's body: a client
	// that sends it slower gets 400 and loses the connection. 0: 1 minute.
	BodyReadTimeout time.Duration
	// MaxSessionsPerTenant bounds the sessions a tenant holds open through
	// the native API together with the chat completions it runs in
	// sessions of their own; one more is refused with 429 naming the quota
	// "sessions". 0: the runtime's runtime.sessions.max_sessions shared
	// out among the keys' tenants, its integer part of
	// max_sessions / (tenants + 1), at least 1, so that no tenant takes
	// every place.
	MaxSessionsPerTenant int
	// Recordings, when set, is told of every settled turn and serves
	// GET .../turns/{tid}/recording (a *replay.Recorder that decorates
	// the runtime's host factory is one). nil: no recordings (404).
	Recordings Recordings
}

// Recordings keeps the recordings of a runtime's turns by run id.
type Recordings interface {
	// Finish records the outcome of the settled turn runID and the
	// request it ran.
	Finish(runID string, req agent.Request, res *agent.Result, err error) error
	// RecordingBytes returns the recording of the turn runID in its file
	// form, or an error: of kind NotFound when it is not kept.
	RecordingBytes(runID string) ([]byte, error)
}

// DefaultMaxTenantEventBytes is Options.MaxTenantEventBytes when it is 0.
const DefaultMaxTenantEventBytes = 256 << 20

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	if o.MaxTurnEventBytes <= 0 {
		o.MaxTurnEventBytes = 64 << 20
	}
	if o.KeepTurns <= 0 {
		o.KeepTurns = 32
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 5 * time.Minute
	}
	if o.MaxTenantEventBytes <= 0 {
		o.MaxTenantEventBytes = DefaultMaxTenantEventBytes
	}
	o.MaxTurnEventBytes = min(o.MaxTurnEventBytes, o.MaxTenantEventBytes)
	if o.MaxStreamsPerTurn <= 0 {
		o.MaxStreamsPerTurn = 16
	}
	if o.MaxHeldPerTenant <= 0 {
		o.MaxHeldPerTenant = 128
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = time.Minute
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = 30 * time.Second
	}
	return o
}

// Server serves one Runtime to the tenants of a Keys over HTTP. Make one
// with New, serve its Handler, and Drain then Close it. A Server is safe
// for concurrent use.
type Server struct {
	rt   *runtime.Runtime
	keys *Keys
	opts Options
	log  *slog.Logger
	h    http.Handler

	mu       sync.Mutex
	draining bool
	closed   bool
	sessions map[string]*sessionEntry // by id
	// byKey holds the entries of sessions by key (one per key), and
	// tenantSessions counts them by tenant, so that a completion finds
	// its place without a scan (addSessionLocked, removeSessionLocked).
	byKey          map[session.Key]*sessionEntry
	tenantSessions map[string]int
	opening        map[string]int          // sessions being opened, by tenant
	running        map[*turnEntry]struct{} // turns not yet settled
	// tenantBytes counts the event bytes of each tenant's kept turns.
	tenantBytes map[string]*atomic.Int64
	held        map[string]int // the requests each tenant holds open (hold)
	// cleanup is the context of the clean-ups started since cleanupFrom
	// (cleanupCtx), cleanupCancel its cancel and cleanupPrev the previous
	// window's.
	cleanup                    context.Context
	cleanupFrom                time.Time
	cleanupCancel, cleanupPrev context.CancelFunc
	starting                   int // turns admitted and not yet running
	// settled, when a waiter asked for it (settledLocked), is closed when
	// a turn settles or a start ends (notifyLocked).
	settled  chan struct{}
	watchers sync.WaitGroup // one per turn, until it settles
	// tenants is how many tenants the keys have (they do not change).
	tenants int
}

// New returns a Server of rt for the tenants of keys. rt and keys must not
// be nil; the Server does not own rt (close it after the Server).
func New(rt *runtime.Runtime, keys *Keys, opts Options) (*Server, error) {
	if rt == nil || keys == nil {
		return nil, fault.New(fault.Validation, "serve", "the runtime and the keys must not be nil")
	}
	opts = opts.withDefaults()
	s := &Server{rt: rt, keys: keys, opts: opts, log: opts.Logger,
		sessions: map[string]*sessionEntry{}, byKey: map[session.Key]*sessionEntry{}, tenantSessions: map[string]int{},
		opening: map[string]int{}, running: map[*turnEntry]struct{}{},
		tenantBytes: map[string]*atomic.Int64{}, held: map[string]int{}, tenants: len(keys.Tenants())}
	s.h = s.routes()
	return s, nil
}

// Handler returns the Server's routes.
func (s *Server) Handler() http.Handler { return s.h }

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.h.ServeHTTP(w, r) }

// Draining reports whether Drain was called.
func (s *Server) Draining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// Running returns how many turns started through the Server have not
// settled.
func (s *Server) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running)
}

// Drain stops taking new sessions and turns (503, and /readyz fails) and
// waits, bounded by ctx, for the running turns to finish: nil when they
// did. When ctx ends first, it interrupts every running turn (cause
// host_shutdown) and waits for them to settle, bounded by grace: an
// Interrupted error counting them when they settled, a Timeout when some
// did not (those are canceled). Streams of the turns end with their
// turns. Repeated calls drain again.
func (s *Server) Drain(ctx context.Context, grace time.Duration) error {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	s.log.Info("draining", "running_turns", s.Running())
	if s.waitRunning(ctx) == nil {
		return nil
	}
	s.mu.Lock()
	turns := make([]*turnEntry, 0, len(s.running))
	for t := range s.running {
		turns = append(turns, t)
	}
	s.mu.Unlock()
	s.log.Warn("drain bound reached: interrupting running turns", "turns", len(turns))
	for _, t := range turns {
		_ = t.turn.Interrupt(agent.Interrupt{Cause: agent.CauseHostShutdown, Detail: "the server is shutting down"})
	}
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := s.waitRunning(gctx); err != nil {
		n := s.Running()
		for _, t := range turns {
			t.turn.Cancel()
		}
		return fault.New(fault.Timeout, "drain", "%d turns did not settle within %s of their interrupt; canceled", n, grace)
	}
	return fault.New(fault.Interrupted, "drain", "%d turns were still running at the drain's bound and were interrupted", len(turns))
}

// waitRunning waits until no turn runs or starts, bounded by ctx.
func (s *Server) waitRunning(ctx context.Context) error {
	for {
		s.mu.Lock()
		n := len(s.running) + s.starting
		var ch <-chan struct{}
		if n > 0 {
			ch = s.settledLocked()
		}
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close interrupts every running turn, waits for the turns' watchers and
// releases every session the Server holds (their durable state stays).
// It does not close the Runtime. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed, s.draining = true, true
	sessions := make([]*sessionEntry, 0, len(s.sessions))
	for _, e := range s.sessions {
		sessions = append(sessions, e)
	}
	clear(s.sessions)
	clear(s.byKey)
	clear(s.tenantSessions)
	s.mu.Unlock()
	for { // a turn being started registers before it is interrupted
		s.mu.Lock()
		n := s.starting
		var ch <-chan struct{}
		if n > 0 {
			ch = s.settledLocked()
		}
		s.mu.Unlock()
		if n == 0 {
			break
		}
		<-ch
	}
	s.mu.Lock()
	turns := make([]*turnEntry, 0, len(s.running))
	for t := range s.running {
		turns = append(turns, t)
	}
	s.mu.Unlock()
	for _, t := range turns {
		_ = t.turn.Interrupt(agent.Interrupt{Cause: agent.CauseHostShutdown, Detail: "the server is closing"})
	}
	s.watchers.Wait()
	for _, e := range sessions {
		e.release()
	}
	return nil
}

// errDraining refuses new work while the server drains.
var errDraining = fault.New(fault.NotAvailable, "serve", "the server is draining and takes no new sessions or turns")

// admit refuses new work while draining.
func (s *Server) admit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return errDraining
	}
	return nil
}

// beginStart admits a turn about to start, so that a drain waits for it;
// endStart must be called once it runs or failed to start.
func (s *Server) beginStart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return errDraining
	}
	s.starting++
	return nil
}

// endStart ends what beginStart began.
func (s *Server) endStart() {
	s.mu.Lock()
	s.starting--
	s.notifyLocked()
	s.mu.Unlock()
}

// settledLocked returns a channel closed at the next notifyLocked: when a
// turn settles or a start ends. It is made only for a waiter, so that a
// turn that no one waits for costs none.
func (s *Server) settledLocked() <-chan struct{} {
	if s.settled == nil {
		s.settled = make(chan struct{})
	}
	return s.settled
}

// notifyLocked wakes the waiters of settledLocked.
func (s *Server) notifyLocked() {
	if s.settled != nil {
		close(s.settled)
		s.settled = nil
	}
}

// quotaHeldRequests names Options.MaxHeldPerTenant in a refusal.
const quotaHeldRequests = "held_requests"

// heldError refuses a request a tenant would hold open past
// Options.MaxHeldPerTenant (REF 11.8.14).
type heldError struct{ err error }

func (e *heldError) Error() string { return e.err.Error() }
func (e *heldError) Unwrap() error { return e.err }

// hold counts a request the tenant holds open until the returned release
// is called, or refuses it with a heldError when the tenant holds
// Options.MaxHeldPerTenant already.
func (s *Server) hold(tenant string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[tenant] >= s.opts.MaxHeldPerTenant {
		return nil, &heldError{err: fault.New(fault.RateLimit, "serve",
			"tenant %q holds %d waits and streams open already (quota %s of %d); retry when one ends",
			tenant, s.held[tenant], quotaHeldRequests, s.opts.MaxHeldPerTenant)}
	}
	s.held[tenant]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.held[tenant]--; s.held[tenant] <= 0 {
			delete(s.held, tenant)
		}
	}, nil
}

// cleanupWindow is how long clean-ups share one context in cleanupCtx; a
// clean-up is bounded by one to two of it.
const cleanupWindow = 30 * time.Second

// cleanupCtx returns the context that bounds a clean-up after a request
// was answered (removing a completion's ephemeral session): it ends one
// to two cleanupWindows from now. The clean-ups that start within one
// window share it, so that each is bounded without a timer of its own
// (arming a timer wakes the network poller, which a completion feels).
func (s *Server) cleanupCtx() context.Context {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cleanup == nil || now.Sub(s.cleanupFrom) >= cleanupWindow {
		if s.cleanupPrev != nil {
			s.cleanupPrev() // its deadline, two windows after its start, has passed
		}
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(2*cleanupWindow))
		s.cleanupPrev, s.cleanupCancel = s.cleanupCancel, cancel
		s.cleanup, s.cleanupFrom = ctx, now
	}
	return s.cleanup
}
