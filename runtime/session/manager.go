package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
)

// Manager owns the sessions of a runtime: it opens leases by key, reclaims
// idle sessions, and runs every turn against the dependencies of the
// current epoch. A Manager is safe for concurrent use.
type Manager struct {
	logger       *slog.Logger
	observers    []SessionObserver
	closeTimeout time.Duration
	finalize     time.Duration

	mu         sync.Mutex
	entries    map[Key]*entry
	tombstones map[string]bool
	deleting   map[Key]*deleteMark
	closed     bool
	draining   bool
	tun        Tunables
	cur        *epoch
	tenants    *tenants
	idleSeq    uint64 // the last entry.idleSeq given

	closeOnce sync.Once
	closeErr  error

	hooks testHooks
}

// testHooks are called at points that the public API passes only
// transiently; tests set them before using the manager, nothing else does.
type testHooks struct {
	// reclaimChecked runs in reclaim, under mu, once the entry, generation
	// and lease checks passed and before idleness is checked and marked.
	reclaimChecked func(s *Session)
	// removePoll runs before each attempt of RemoveAgent to close the
	// agent's sessions, without mu.
	removePoll func()
}

// entry is a live session with its lease count and idle timer.
type entry struct {
	s        *Session
	tenant   string // the agent's tenant (agent.Definition.TenantID)
	leases   int
	timer    *time.Timer
	timerGen uint64
	// idleSeq orders the idle sessions by when their idle timer was
	// armed: the smallest is the one idle longest (REF 2.1.8).
	idleSeq uint64
}

// epoch is one generation of dependencies with a count of the turns that
// use it.
type epoch struct {
	deps      Deps
	refs      int
	retired   bool
	onRetired func()
}

const idlePoll = 10 * time.Millisecond

// NewManager returns a manager whose first epoch is deps, with the zero
// Config (REF 2.8.10).
func NewManager(deps Deps) (*Manager, error) { return NewManagerWithConfig(deps, Config{}) }

// NewManagerWithConfig returns a manager whose first epoch is deps,
// configured by cfg (REF 2.8.10): a missing resolver, host factory or
// bus, resume without a deleting store, or a negative or nil setting of
// cfg is a Validation error.
func NewManagerWithConfig(deps Deps, cfg Config) (*Manager, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if err := deps.validate("new session manager"); err != nil {
		return nil, err
	}
	return &Manager{
		logger:       cfg.Logger,
		observers:    cfg.Observers,
		closeTimeout: cfg.CloseTimeout,
		finalize:     cfg.FinalizeBudget,
		entries:      map[Key]*entry{},
		tombstones:   map[string]bool{},
		deleting:     map[Key]*deleteMark{},
		tun:          cfg.Tunables,
		cur:          &epoch{deps: deps},
		tenants:      newTenants(cfg.Quotas, cfg.Clock),
	}, nil
}

// Open returns a new lease on the session of key, creating the session when
// there is none (REF 2.1.3). Each call returns an independent lease;
// close it when done.
func (m *Manager) Open(ctx context.Context, key Key) (*Lease, error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "open session", "ctx must not be nil")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := key.Validate(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	l, evicted, err := m.openLocked(key)
	m.mu.Unlock()
	for _, e := range evicted {
		m.closeEvicted(e)
	}
	return l, err
}

// openLocked is Open under m.mu; it returns the idle sessions it evicted
// to make room (REF 2.1.8), for the caller to close after unlocking.
func (m *Manager) openLocked(key Key) (*Lease, []*entry, error) {
	switch {
	case m.closed:
		return nil, nil, ErrManagerClosed
	case m.draining:
		return nil, nil, ErrManagerDraining
	case m.deleting[key] != nil:
		return nil, nil, fault.New(fault.NotAvailable, "open session", "session %s is being deleted", key)
	case m.tombstones[key.AgentID]:
		return nil, nil, fault.New(fault.NotFound, "open session", "agent %q is not deployed", key.AgentID)
	}
	if e := m.entries[key]; e != nil {
		if e.s.isClosing() {
			return nil, nil, fault.New(fault.NotAvailable, "open session", "session %s is closing", key)
		}
		e.leases++
		m.stopTimerLocked(e)
		return &Lease{m: m, e: e}, nil, nil
	}
	full := fault.New(fault.RateLimit, "open session", "max sessions reached (%d)", m.tun.MaxSessions)
	if len(m.entries) >= m.tun.MaxSessions && m.oldestIdleLocked(anyEntry) == nil {
		return nil, nil, full
	}
	ag, ok := m.cur.deps.Resolver.Agent(key.AgentID)
	if !ok {
		return nil, nil, fault.New(fault.NotFound, "open session", "agent %q is not deployed", key.AgentID)
	}
	tenant := ag.Definition.TenantID()
	var evicted []*entry
	if err := m.tenantSessionsLocked(tenant); err != nil {
		v := m.evictLocked(func(e *entry) bool { return e.tenant == tenant })
		if v == nil {
			return nil, nil, fmt.Errorf("open session %s: %w", key, err)
		}
		evicted = append(evicted, v)
	}
	if len(m.entries) >= m.tun.MaxSessions {
		v := m.evictLocked(anyEntry)
		if v == nil {
			return nil, evicted, full
		}
		evicted = append(evicted, v)
	}
	e := &entry{s: newSession(m, key, m.tun), tenant: tenant, leases: 1}
	m.entries[key] = e
	return &Lease{m: m, e: e}, evicted, nil
}

// GetOrCreate is Open.
func (m *Manager) GetOrCreate(ctx context.Context, key Key) (*Lease, error) { return m.Open(ctx, key) }

// Lease is one holder's claim on a session. While any lease is open the
// session is not reclaimed.
type Lease struct {
	m    *Manager
	e    *entry
	once sync.Once
}

// Session returns the shared session.
func (l *Lease) Session() *Session { return l.e.s }

// Close releases the lease (REF 2.1.5). It is idempotent and safe to
// call concurrently.
func (l *Lease) Close() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		defer l.m.mu.Unlock()
		l.e.leases--
		l.m.armTimerLocked(l.e)
	})
	return nil
}

func (m *Manager) stopTimerLocked(e *entry) {
	e.timerGen++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
}

// armTimerLocked starts the idle timer of e when it has no lease and is
// idle, unless its agent is tombstoned or its key is being deleted
// (REF 2.1.5–2.1.7).
func (m *Manager) armTimerLocked(e *entry) {
	wasArmed := e.timer != nil
	m.stopTimerLocked(e)
	if m.closed || e.leases > 0 || !e.s.idle() || m.tombstones[e.s.key.AgentID] || m.deleting[e.s.key] != nil {
		return
	}
	if !wasArmed { // a restarted timer keeps the session's place in the idle order
		m.idleSeq++
		e.idleSeq = m.idleSeq
	}
	gen := e.timerGen
	e.timer = time.AfterFunc(m.tun.IdleTimeout, func() { m.reclaim(e, gen) })
}

// reclaim closes an idle session whose timer fired, if nothing changed
// since the timer was armed.
func (m *Manager) reclaim(e *entry, gen uint64) {
	m.mu.Lock()
	if m.entries[e.s.key] != e || e.timerGen != gen || e.leases > 0 || e.s.isClosing() {
		m.mu.Unlock()
		return
	}
	if h := m.hooks.reclaimChecked; h != nil {
		h(e.s)
	}
	// Idleness is checked and the session marked closing in one step, so
	// that no turn starts in between (REF 2.1.7).
	if !e.s.closeIfIdle() {
		m.mu.Unlock()
		return
	}
	delete(m.entries, e.s.key)
	m.mu.Unlock()
	m.notifyClosing(e.s)
	m.notifyClosed(e.s, e.s.close(m.closeTimeout))
}

// sessionChanged re-evaluates the idle timer of s after its idleness may
// have changed.
func (m *Manager) sessionChanged(s *Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entries[s.key]; e != nil && e.s == s {
		m.armTimerLocked(e)
	}
}

// acquireEpoch pins the current epoch for a turn.
func (m *Manager) acquireEpoch() (*epoch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrManagerClosed
	}
	if m.draining {
		return nil, ErrManagerDraining
	}
	m.cur.refs++
	return m.cur, nil
}

// releaseEpoch drops a turn's reference; the last reference of a retired
// epoch runs its retire hook.
func (m *Manager) releaseEpoch(e *epoch) {
	m.mu.Lock()
	e.refs--
	run := e.retired && e.refs == 0 && e.onRetired != nil
	var hook func()
	if run {
		hook, e.onRetired = e.onRetired, nil
	}
	m.mu.Unlock()
	if hook != nil {
		hook()
	}
}

// SwapDeps installs a new epoch; turns already running keep the old one,
// whose onRetired runs exactly once when its last turn ends, or now when
// none is running (REF 2.8.7).
func (m *Manager) SwapDeps(deps Deps, onRetired func()) error {
	if err := deps.validate("swap deps"); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrManagerClosed
	}
	old := m.cur
	m.cur = &epoch{deps: deps}
	old.retired = true
	old.onRetired = onRetired
	var hook func()
	if old.refs == 0 {
		hook, old.onRetired = old.onRetired, nil
	}
	m.mu.Unlock()
	if hook != nil {
		hook()
	}
	return nil
}

// Deps returns the current epoch's dependencies.
func (m *Manager) Deps() Deps {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur.deps
}

// UpdateTunables replaces the tunables atomically (REF 2.8.6).
// IdleTimeout and MaxSessions apply at once (when the idle timeout changes,
// armed idle timers restart with the new one; an unchanged timeout leaves
// them running, so that repeated reloads do not keep idle sessions alive);
// the others apply to sessions created afterwards.
func (m *Manager) UpdateTunables(t Tunables) error {
	if err := t.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrManagerClosed
	}
	idleChanged := m.tun.IdleTimeout != t.IdleTimeout
	m.tun = t
	if !idleChanged {
		return nil
	}
	for _, e := range m.entries {
		if e.timer != nil {
			m.armTimerLocked(e)
		}
	}
	return nil
}

// Tunables returns the current tunables.
func (m *Manager) Tunables() Tunables {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tun
}

// Idle reports whether no live session has an active turn (REF
// 2.8.1). A manager with no sessions is idle; a closing session whose turn
// has stopped counts as idle.
func (m *Manager) Idle() bool {
	m.mu.Lock()
	sessions := make([]*Session, 0, len(m.entries))
	for _, e := range m.entries {
		sessions = append(sessions, e.s)
	}
	m.mu.Unlock()
	for _, s := range sessions {
		if s.busy() {
			return false
		}
	}
	return true
}

// WaitIdle waits until Idle holds, polling every 10 ms, without changing
// any state (REF 2.8.2).
func (m *Manager) WaitIdle(ctx context.Context) error {
	if ctx == nil {
		return fault.New(fault.Validation, "wait idle", "ctx must not be nil")
	}
	return pollUntil(ctx, m.Idle)
}

// Drain makes the manager refuse new leases and turns for good and waits,
// bounded by ctx, until it is idle (REF 2.8.3, 1.9). It never
// interrupts a turn. A Drain whose ctx ends leaves the manager draining; a
// repeated Drain returns nil once idle.
func (m *Manager) Drain(ctx context.Context) error {
	if ctx == nil {
		return fault.New(fault.Validation, "drain", "ctx must not be nil")
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrManagerClosed
	}
	m.draining = true
	m.mu.Unlock()
	return pollUntil(ctx, m.Idle)
}

// Draining reports whether Drain was called.
func (m *Manager) Draining() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.draining
}

// Close stops every idle timer, refuses new leases, interrupts every active
// turn with cause host_shutdown and waits at most the close timeout
// (Config.CloseTimeout, 30 s by default)
// for each session, concurrently (REF 2.8.8). Each session keeps its
// entry, closing, until its close returns, so Idle stays false while a
// turn is stopping (REF 2.8.1). A turn that does not stop in time is
// logged, not returned. Close is idempotent.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		closing := make([]*entry, 0, len(m.entries))
		for _, e := range m.entries {
			m.stopTimerLocked(e)
			e.s.markClosing()
			closing = append(closing, e)
		}
		m.mu.Unlock()
		m.closeErr = m.closeEntries(closing)
	})
	return m.closeErr
}

// closeEntries notifies and closes sessions concurrently and waits; each
// entry still in the map is removed once its session's close returned.
func (m *Manager) closeEntries(entries []*entry) error {
	for _, e := range entries {
		m.notifyClosing(e.s)
	}
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Go(func() {
			err := e.s.close(m.closeTimeout)
			if err != nil {
				m.logger.Warn("session did not close in time", "session", e.s.key.String(), "error", err)
			}
			m.mu.Lock()
			if m.entries[e.s.key] == e {
				delete(m.entries, e.s.key)
			}
			m.mu.Unlock()
			m.notifyClosed(e.s, err)
		})
	}
	wg.Wait()
	return nil
}

func (m *Manager) notifyClosing(s *Session) {
	if s.closingNotified.CompareAndSwap(false, true) {
		for _, o := range m.observers {
			o.OnSessionClosing(s)
		}
	}
}

// notifyClosed tells the observers once per session, however many of
// Close, DeleteSession, RemoveAgent and the idle reclaim race to close it.
func (m *Manager) notifyClosed(s *Session, err error) {
	if !s.closedNotified.CompareAndSwap(false, true) {
		return
	}
	for _, o := range m.observers {
		o.OnSessionClosed(s, err)
	}
}

// Sessions returns the number of live session entries.
func (m *Manager) Sessions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

var errNotStopped = errors.New("turn did not stop in time")

// ManagerBinder is implemented by a deployment resource that needs the
// runtime's session manager (a delegation service that runs sub-runs as
// real turns, for example). The runtime binds at most one such resource per
// generation, once, after the manager exists.
type ManagerBinder interface {
	BindSessionManager(m *Manager) error
}
