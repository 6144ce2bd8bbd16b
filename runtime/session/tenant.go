package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// Quotas bound what the agents of one tenant may hold and spend: the keys
// of runtime.tenants.<tenant> in a deployment document. A zero field is no
// bound. Amounts a tenant holds or a turn spends are BudgetExceeded when
// passed; rates (per minute) are RateLimit, and while a rate is spent no
// new turn of the tenant starts. Every error is a *QuotaError naming the
// quota and the tenant.
type Quotas struct {
	// Sessions is how many sessions the tenant's agents may have open at
	// once (leased or idle-retained).
	Sessions int `json:"sessions"`
	// ConcurrentTurns is how many turns may run at once.
	ConcurrentTurns int `json:"concurrent_turns"`
	// CPUMsPerTurn is the script CPU time one turn may spend, in
	// milliseconds; CPUMsPerMinute what the tenant may spend in any minute.
	CPUMsPerTurn   int64 `json:"cpu_ms_per_turn"`
	CPUMsPerMinute int64 `json:"cpu_ms_per_minute"`
	// MemoryPerWorker caps the memory of each script worker process of the
	// tenant, in bytes (process isolation; in-process runtimes bound each
	// call by memory_bytes instead).
	MemoryPerWorker int64 `json:"memory_per_worker"`
	// EventsPerTurn and EventBytesPerTurn bound the events (and their
	// payload bytes) one turn publishes.
	EventsPerTurn     int   `json:"events_per_turn"`
	EventBytesPerTurn int64 `json:"event_bytes_per_turn"`
	// ModelTokensPerMinute bounds the model tokens the tenant's turns
	// report (host.reportUsage, inference nodes) in any minute.
	ModelTokensPerMinute int64 `json:"model_tokens_per_minute"`
}

// Validate refuses a negative bound (Validation, naming the key).
func (q Quotas) Validate() error {
	if key, v := q.negative(); key != "" {
		return fault.New(fault.Validation, "", "%s must be >= 0, got %d", key, v)
	}
	return nil
}

// InvalidKey is the key of the first negative bound, or "".
func (q Quotas) InvalidKey() string {
	key, _ := q.negative()
	return key
}

func (q Quotas) negative() (string, int64) {
	for _, f := range []struct {
		key string
		v   int64
	}{
		{"sessions", int64(q.Sessions)}, {"concurrent_turns", int64(q.ConcurrentTurns)},
		{"cpu_ms_per_turn", q.CPUMsPerTurn}, {"cpu_ms_per_minute", q.CPUMsPerMinute},
		{"memory_per_worker", q.MemoryPerWorker}, {"events_per_turn", int64(q.EventsPerTurn)},
		{"event_bytes_per_turn", q.EventBytesPerTurn}, {"model_tokens_per_minute", q.ModelTokensPerMinute},
	} {
		if f.v < 0 {
			return f.key, f.v
		}
	}
	return "", 0
}

// QuotaError is a quota a tenant's agents passed. It carries the kind
// (BudgetExceeded or RateLimit) for errors.Is; RetryAfter, for a rate, is
// when the spent minute frees enough to go on.
type QuotaError struct {
	Tenant     string
	Quota      string // the key, for example "concurrent_turns"
	Limit      int64
	RetryAfter time.Duration // rates only
	kind       *fault.Kind
}

func (e *QuotaError) Error() string {
	s := fmt.Sprintf("tenant %q: quota %s of %d reached", e.Tenant, e.Quota, e.Limit)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter.Round(time.Millisecond))
	}
	return s
}

// Unwrap returns the kind.
func (e *QuotaError) Unwrap() error { return e.kind }

func amountError(tenant, quota string, limit int64) error {
	return &QuotaError{Tenant: tenant, Quota: quota, Limit: limit, kind: fault.BudgetExceeded}
}

// tenants keeps what each tenant holds and spends. Its lock is its own.
type tenants struct {
	now func() time.Time

	mu     sync.Mutex
	quotas map[string]Quotas
	state  map[string]*tenantState
}

// tenantState is one tenant's running turns and spent minutes.
type tenantState struct {
	turns  int
	cpu    minute // milliseconds
	tokens minute
}

func newTenants(quotas map[string]Quotas, now func() time.Time) *tenants {
	if now == nil {
		now = time.Now
	}
	return &tenants{now: now, quotas: quotas, state: map[string]*tenantState{}}
}

// set replaces the quotas (a reload); what is held and spent stays.
func (ts *tenants) set(quotas map[string]Quotas) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.quotas = quotas
}

func (ts *tenants) quota(tenant string) Quotas {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.quotas[tenant]
}

func (ts *tenants) stateLocked(tenant string) *tenantState {
	st := ts.state[tenant]
	if st == nil {
		st = &tenantState{}
		ts.state[tenant] = st
	}
	return st
}

// beginTurn admits a turn of tenant, or refuses it: too many running
// (BudgetExceeded) or a rate spent (RateLimit). end releases it.
func (ts *tenants) beginTurn(tenant string) (end func(), err error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	q, st, now := ts.quotas[tenant], ts.stateLocked(tenant), ts.now()
	switch {
	case q.ConcurrentTurns > 0 && st.turns >= q.ConcurrentTurns:
		return nil, amountError(tenant, "concurrent_turns", int64(q.ConcurrentTurns))
	case q.CPUMsPerMinute > 0 && st.cpu.sum(now) >= q.CPUMsPerMinute:
		return nil, st.cpu.rateError(now, tenant, "cpu_ms_per_minute", q.CPUMsPerMinute)
	case q.ModelTokensPerMinute > 0 && st.tokens.sum(now) >= q.ModelTokensPerMinute:
		return nil, st.tokens.rateError(now, tenant, "model_tokens_per_minute", q.ModelTokensPerMinute)
	}
	st.turns++
	var once sync.Once
	return func() {
		once.Do(func() {
			ts.mu.Lock()
			st.turns--
			ts.mu.Unlock()
		})
	}, nil
}

// spend adds n to a rate of tenant and reports whether it is now spent.
func (ts *tenants) spend(tenant string, rate func(*tenantState) *minute, n, limit int64, quota string) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := ts.now()
	m := rate(ts.stateLocked(tenant))
	m.add(now, n)
	if limit > 0 && m.sum(now) > limit {
		return m.rateError(now, tenant, quota, limit)
	}
	return nil
}

// minute is a sliding window of the last minute in slots of minuteSlot.
type minute struct {
	at [minuteSlots]int64 // the slot's start, in slot units since the epoch
	n  [minuteSlots]int64 // what the slot holds
}

const (
	minuteSlots = 12
	minuteSlot  = time.Minute / minuteSlots
)

func slotOf(t time.Time) int64 { return t.UnixNano() / int64(minuteSlot) }

func (m *minute) add(now time.Time, n int64) {
	s := slotOf(now)
	i := s % minuteSlots
	if m.at[i] != s {
		m.at[i], m.n[i] = s, 0
	}
	m.n[i] += n
}

// sum is what the last minute holds.
func (m *minute) sum(now time.Time) int64 {
	s, total := slotOf(now), int64(0)
	for i := range minuteSlots {
		if s-m.at[i] < minuteSlots {
			total += m.n[i]
		}
	}
	return total
}

// rateError is the RateLimit of a spent rate, with the time until its
// oldest slot leaves the window.
func (m *minute) rateError(now time.Time, tenant, quota string, limit int64) error {
	s, oldest := slotOf(now), slotOf(now)
	for i := range minuteSlots {
		if s-m.at[i] < minuteSlots && m.n[i] > 0 && m.at[i] < oldest {
			oldest = m.at[i]
		}
	}
	free := time.Unix(0, (oldest+minuteSlots)*int64(minuteSlot))
	return &QuotaError{Tenant: tenant, Quota: quota, Limit: limit, RetryAfter: max(free.Sub(now), time.Millisecond), kind: fault.RateLimit}
}

// turnQuota is what one turn has spent of its tenant's quotas.
type turnQuota struct {
	ts     *tenants
	tenant string
	q      Quotas

	mu       sync.Mutex
	cpu      time.Duration
	events   int
	bytes    int64
	exceeded error // the first per-turn amount passed: every later charge fails with it
}

// ChargeCPU charges d to the turn and to its tenant's minute.
func (tq *turnQuota) ChargeCPU(d time.Duration) error {
	tq.mu.Lock()
	tq.cpu += d
	if tq.exceeded == nil && tq.q.CPUMsPerTurn > 0 && tq.cpu.Milliseconds() > tq.q.CPUMsPerTurn {
		tq.exceeded = amountError(tq.tenant, "cpu_ms_per_turn", tq.q.CPUMsPerTurn)
	}
	err := tq.exceeded
	tq.mu.Unlock()
	if err != nil {
		return err
	}
	return tq.ts.spend(tq.tenant, func(st *tenantState) *minute { return &st.cpu }, d.Milliseconds(),
		tq.q.CPUMsPerMinute, "cpu_ms_per_minute")
}

// chargeEvent counts one published event of n payload bytes.
func (tq *turnQuota) chargeEvent(n int) error {
	tq.mu.Lock()
	defer tq.mu.Unlock()
	tq.events++
	tq.bytes += int64(n)
	switch {
	case tq.exceeded != nil:
	case tq.q.EventsPerTurn > 0 && tq.events > tq.q.EventsPerTurn:
		tq.exceeded = amountError(tq.tenant, "events_per_turn", int64(tq.q.EventsPerTurn))
	case tq.q.EventBytesPerTurn > 0 && tq.bytes > tq.q.EventBytesPerTurn:
		tq.exceeded = amountError(tq.tenant, "event_bytes_per_turn", tq.q.EventBytesPerTurn)
	}
	return tq.exceeded
}

// quotaHost charges a turn's events and model usage to its tenant and
// offers the engine the agent.Meter capability.
type quotaHost struct {
	agent.Host
	tq *turnQuota
}

var (
	_ agent.Meter         = (*quotaHost)(nil)
	_ agent.HostUnwrapper = (*quotaHost)(nil)
)

func (h *quotaHost) UnwrapHost() agent.Host          { return h.Host }
func (h *quotaHost) ChargeCPU(d time.Duration) error { return h.tq.ChargeCPU(d) }

// Publish refuses an event past the turn's events_per_turn or
// event_bytes_per_turn.
func (h *quotaHost) Publish(ctx context.Context, env event.Envelope) error {
	if err := h.tq.chargeEvent(len(env.Payload)); err != nil {
		return err
	}
	return h.Host.Publish(ctx, env)
}

// ReportUsage charges the tokens to the tenant's minute: past
// model_tokens_per_minute it is RateLimit, after the usage is passed on.
func (h *quotaHost) ReportUsage(ctx context.Context, u agent.Usage) error {
	err := h.Host.ReportUsage(ctx, u)
	tokens := u.TotalTokens
	if tokens == 0 {
		tokens = u.InputTokens + u.OutputTokens
	}
	if qerr := h.tq.ts.spend(h.tq.tenant, func(st *tenantState) *minute { return &st.tokens }, tokens,
		h.tq.q.ModelTokensPerMinute, "model_tokens_per_minute"); qerr != nil {
		return qerr
	}
	return err
}

// tenantSessionsLocked refuses a session past the tenant's sessions
// quota; m.mu is held.
func (m *Manager) tenantSessionsLocked(tenant string) error {
	q := m.tenants.quota(tenant)
	if q.Sessions <= 0 {
		return nil
	}
	n := 0
	for _, e := range m.entries {
		if e.tenant == tenant {
			n++
		}
	}
	if n >= q.Sessions {
		return amountError(tenant, "sessions", int64(q.Sessions))
	}
	return nil
}

// UpdateQuotas replaces the tenants' quotas; what they hold and have spent
// stays, and a new bound applies from the next session or turn (a running
// turn keeps the bounds it started with). A negative bound is a
// Validation error.
func (m *Manager) UpdateQuotas(quotas map[string]Quotas) error {
	q, err := checkQuotas(quotas)
	if err != nil {
		return err
	}
	m.tenants.set(q)
	return nil
}

// WorkerMemoryBinder is implemented by a deployment resource that caps
// the memory of the worker processes it runs per tenant (sandbox.Runtime/js
// in isolation: process). The runtime hands every such resource of a
// generation, once after it is built, the memory_per_worker quota of each
// tenant as that generation declares it (0: the tenant sets none, and the
// resource's own setting applies).
type WorkerMemoryBinder interface {
	BindWorkerMemory(quota func(tenant string) int64)
}
