package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/session"
)

// Service is the delegation.Service/local resource: it runs the
// agents of its directory in this process. Bound to a session manager
// (session.ManagerBinder, which the runtime does at build), every
// delegated run is a real session turn; unbound, it runs the target with
// agent.Execute (legacy mode). It is safe for concurrent use; Close stops
// the async runs and waits for them.
type Service struct {
	dir      delegation.Directory
	provider delegation.SessionProvider
	cfg      ServiceSettings
	logger   *slog.Logger
	slots    chan struct{} // one per running delegation
	workers  chan struct{} // one per running async delegation

	bg     context.Context // parent of async runs; cancelled by Close
	stop   context.CancelFunc
	async  sync.WaitGroup
	closed sync.Once

	mu      sync.Mutex
	manager *session.Manager
	records map[string]*record // by delegation id
	keys    map[string]*record // by idempotency key
	order   []*record          // in creation order, for eviction
	shut    bool
}

var (
	_ delegation.Service    = (*Service)(nil)
	_ session.ManagerBinder = (*Service)(nil)
	_ io.Closer             = (*Service)(nil)
)

// ServiceConfig is what NewService needs.
type ServiceConfig struct {
	Directory delegation.Directory       // required
	Provider  delegation.SessionProvider // nil: a fresh context per delegation (RandomProvider)
	Settings  ServiceSettings
	Logger    *slog.Logger // nil: slog.Default()
}

// NewService returns a service over cfg. The settings are validated
// and completed with their defaults.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Directory == nil || agent.IsNil(cfg.Directory) {
		return nil, fault.New(fault.Validation, "new delegation service", "directory is required")
	}
	settings, err := cfg.Settings.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Provider == nil || agent.IsNil(cfg.Provider) {
		cfg.Provider = RandomProvider()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	bg, stop := context.WithCancel(context.Background())
	return &Service{
		dir: cfg.Directory, provider: cfg.Provider, cfg: settings, logger: cfg.Logger,
		slots: make(chan struct{}, settings.MaxConcurrency), workers: make(chan struct{}, settings.DeferWorkers),
		bg: bg, stop: stop,
		records: map[string]*record{}, keys: map[string]*record{},
	}, nil
}

// Settings returns the service's settings with their defaults.
func (s *Service) Settings() ServiceSettings { return s.cfg }

// BindSessionManager makes every later delegation a session turn of m.
func (s *Service) BindSessionManager(m *session.Manager) error {
	if m == nil {
		return fault.New(fault.Validation, "bind session manager", "manager must not be nil")
	}
	s.mu.Lock()
	s.manager = m
	s.mu.Unlock()
	return nil
}

func (s *Service) sessions() *session.Manager {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.manager
}

// Close cancels the async delegations still running and waits for them.
// It is idempotent.
func (s *Service) Close() error {
	s.closed.Do(func() {
		s.mu.Lock()
		s.shut = true
		s.mu.Unlock()
		s.stop()
		s.async.Wait()
	})
	return nil
}

// Delegate runs req (see delegation.Service). Refusals, in order: a nil ctx or an
// invalid request (Validation); a depth of 0 or less (Validation) or past
// max_depth (PolicyDenied); an unknown target (NotFound); an idempotency
// key reused with another request (Conflict); a closed service
// (NotAvailable); max_concurrency delegations already running
// (RateLimit).
func (s *Service) Delegate(ctx context.Context, req delegation.Request) (delegation.Response, error) {
	if ctx == nil {
		return delegation.Response{}, fault.New(fault.Validation, "delegate", "ctx must not be nil")
	}
	if err := req.Validate(); err != nil {
		return delegation.Response{}, err
	}
	depth, err := s.checkDepth(ctx, req.Target)
	if err != nil {
		return delegation.Response{}, err
	}
	if err := s.checkTarget(ctx, req.Target); err != nil {
		return delegation.Response{}, err
	}
	req = req.Clone()
	rec, replay, err := s.admit(delegation.CallerFromContext(ctx), req)
	if err != nil || replay {
		return s.replay(ctx, rec, req.Mode, err)
	}
	if req.Mode == delegation.ModeAsync { // admit counted it in s.async
		accepted := rec.response()
		go func() {
			defer s.async.Done()
			defer func() { <-s.workers }()
			s.execute(delegation.ContextWithDepth(s.bg, depth), depth, rec, req, nil)
		}()
		return accepted, nil
	}
	caller, _ := agent.HostFromContext(ctx)
	s.execute(ctx, depth, rec, req, caller)
	return rec.response(), nil
}

// checkDepth returns the depth the target runs at (REF 6.2.3).
func (s *Service) checkDepth(ctx context.Context, target string) (int, error) {
	depth := delegation.DepthFromContext(ctx) + 1
	switch {
	case depth <= 0:
		return 0, fault.New(fault.Validation, "delegate", "target %q: depth %d is not positive", target, depth)
	case depth > s.cfg.MaxDepth:
		return 0, fault.New(fault.PolicyDenied, "delegate", "target %q: depth %d exceeds max_depth %d", target, depth, s.cfg.MaxDepth)
	}
	return depth, nil
}

// checkTarget finds the target in the directory or, when a session
// manager is bound, among the agents the manager resolves (agents
// registered while the runtime runs are there).
func (s *Service) checkTarget(ctx context.Context, target string) error {
	_, err := s.dir.Get(ctx, target)
	if err == nil || !fault.Is(err, fault.NotFound) {
		return err
	}
	if m := s.sessions(); m != nil {
		if r := m.Deps().Resolver; r != nil {
			if _, ok := r.Agent(target); ok {
				return nil
			}
		}
	}
	return err
}

// replay answers a request that admit did not start: an error, or the
// record of the same idempotency key (waited for when req is sync).
func (s *Service) replay(ctx context.Context, rec *record, mode delegation.Mode, err error) (delegation.Response, error) {
	if err != nil {
		return delegation.Response{}, err
	}
	if mode == delegation.ModeAsync {
		return rec.response(), nil
	}
	select {
	case <-rec.done:
		return rec.response(), nil
	case <-ctx.Done():
		return delegation.Response{}, fault.FromContext(ctx.Err(), "delegate")
	}
}

// Get returns the latest response of delegation id.
func (s *Service) Get(ctx context.Context, id string) (delegation.Response, error) {
	if err := ctxErr(ctx, "get delegation"); err != nil {
		return delegation.Response{}, err
	}
	s.mu.Lock()
	rec, ok := s.records[id]
	s.mu.Unlock()
	if !ok {
		return delegation.Response{}, fault.New(fault.NotFound, "get delegation", "no delegation %q (unknown or forgotten)", id)
	}
	return rec.response(), nil
}

// execute runs one admitted delegation and settles its record.
func (s *Service) execute(ctx context.Context, depth int, rec *record, req delegation.Request, caller agent.Host) {
	defer func() { <-s.slots }()
	if s.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(s.cfg.Timeout))
		defer cancel()
	}
	var res *agent.Result
	var err error
	if m := s.sessions(); m != nil {
		res, err = s.runTurn(ctx, m, depth, rec, req)
	} else {
		res, err = s.runLegacy(ctx, depth, rec, req, caller)
	}
	if res != nil && res.Status == agent.StatusCanceled && ctx.Err() != nil {
		res.Err = fault.FromContext(ctx.Err(), "delegate") // say why: the delegation's deadline or cancellation
	}
	s.settle(rec, res, err)
}

// newID returns a fresh delegation id.
func newID() string { return "dlg-" + randomHex(8) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
