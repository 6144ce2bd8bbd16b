package session_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quotaEnv is a manager with the agents "a1", "a2" of tenant "acme" and
// "b1" of tenant "bravo", each running eng, with acme bounded by q and a
// clock the test moves.
type quotaEnv struct {
	*env
	mu  sync.Mutex
	now time.Time
}

func newQuotaEnv(t *testing.T, q session.Quotas, eng agent.Engine) *quotaEnv {
	t.Helper()
	qe := &quotaEnv{now: time.Unix(1_000_000, 0)}
	cfg := session.Config{Quotas: map[string]session.Quotas{"acme": q}, Clock: qe.clock}
	qe.env = newEnvConfig(t, nil, cfg)
	for id, tenant := range map[string]string{"a1": "acme", "a2": "acme", "b1": "bravo"} {
		qe.agents.putAgent(&agent.Agent{ID: id, Engine: eng, Definition: agent.Definition{Tenant: tenant}})
	}
	return qe
}

func (qe *quotaEnv) clock() time.Time {
	qe.mu.Lock()
	defer qe.mu.Unlock()
	return qe.now
}

func (qe *quotaEnv) advance(d time.Duration) {
	qe.mu.Lock()
	defer qe.mu.Unlock()
	qe.now = qe.now.Add(d)
}

func (qe *quotaEnv) lease(t *testing.T, agentID, contextID string) (*session.Lease, error) {
	t.Helper()
	l, err := qe.m.Open(context.Background(), session.Key{AgentID: agentID, ContextID: contextID})
	if err == nil {
		t.Cleanup(func() { _ = l.Close() })
	}
	return l, err
}

func (qe *quotaEnv) run(t *testing.T, agentID, contextID string) (*agent.Result, error) {
	t.Helper()
	l, err := qe.lease(t, agentID, contextID)
	require.NoError(t, err)
	turn, err := l.Session().Start(context.Background(), ask("go"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return turn.Wait(ctx)
}

// requireQuota fails unless err is the quota of tenant, of kind k.
func requireQuota(t *testing.T, err error, k *fault.Kind, tenant, quota string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, k)
	var qe *session.QuotaError
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, tenant, qe.Tenant)
	assert.Equal(t, quota, qe.Quota)
	assert.Contains(t, err.Error(), quota)
	assert.Contains(t, err.Error(), `"`+tenant+`"`)
}

// resultErr is a finished turn's error.
func resultErr(res *agent.Result, err error) error {
	if err != nil {
		return err
	}
	return res.Err
}

var idle = agent.EngineFunc(func(context.Context, agent.Run, agent.Host, *agent.Board) (*agent.Board, error) {
	return agent.NewBoard(), nil
})

// A tenant's open sessions stop at its quota, counted across its agents;
// another tenant opens as many as it likes, and a closed session frees
// its place.
func TestQuotaSessions(t *testing.T) {
	t.Parallel()
	qe := newQuotaEnv(t, session.Quotas{Sessions: 2}, idle)
	_, err := qe.lease(t, "a1", "c1")
	require.NoError(t, err)
	_, err = qe.lease(t, "a2", "c2")
	require.NoError(t, err)
	_, err = qe.lease(t, "a1", "c1")
	require.NoError(t, err, "another lease on an open session is no new session")
	_, err = qe.lease(t, "a1", "c3")
	requireQuota(t, err, fault.BudgetExceeded, "acme", "sessions")
	for i := range 5 {
		_, err := qe.lease(t, "b1", string(rune('a'+i)))
		require.NoError(t, err, "bravo is not bounded by acme's quota")
	}
	require.NoError(t, qe.m.DeleteSession(context.Background(), session.Key{AgentID: "a2", ContextID: "c2"}))
	_, err = qe.lease(t, "a1", "c3")
	require.NoError(t, err, "a deleted session frees its place")
}

// A tenant's running turns stop at its quota; another tenant's turn runs.
func TestQuotaConcurrentTurns(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	blocking := agent.EngineFunc(func(ctx context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return b, nil
	})
	qe := newQuotaEnv(t, session.Quotas{ConcurrentTurns: 1}, blocking)
	l1, err := qe.lease(t, "a1", "c1")
	require.NoError(t, err)
	first, err := l1.Session().Start(context.Background(), ask("go"))
	require.NoError(t, err)
	l2, err := qe.lease(t, "a2", "c2")
	require.NoError(t, err)
	_, err = l2.Session().Start(context.Background(), ask("go"))
	requireQuota(t, err, fault.BudgetExceeded, "acme", "concurrent_turns")
	lb, err := qe.lease(t, "b1", "c3")
	require.NoError(t, err)
	other, err := lb.Session().Start(context.Background(), ask("go"))
	require.NoError(t, err, "bravo runs beside acme's turn")
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = first.Wait(ctx)
	require.NoError(t, err)
	_, err = other.Wait(ctx)
	require.NoError(t, err)
	_, err = l2.Session().Start(context.Background(), ask("go"))
	require.NoError(t, err, "a finished turn frees its place")
}

// charging is an engine that charges each of its steps to the host's
// agent.Meter, as the graph engine charges script calls, and fails with
// the first refused charge.
func charging(steps int, each time.Duration) agent.Engine {
	return agent.EngineFunc(func(_ context.Context, _ agent.Run, h agent.Host, b *agent.Board) (*agent.Board, error) {
		m, ok := agent.CapabilityFromHost[agent.Meter](h)
		if !ok {
			return b, nil
		}
		for range steps {
			if err := m.ChargeCPU(each); err != nil {
				return b, err
			}
		}
		return b, nil
	})
}

// A turn that spends more script CPU time than cpu_ms_per_turn fails
// with it; another tenant's same turn completes.
func TestQuotaCPUPerTurn(t *testing.T) {
	t.Parallel()
	qe := newQuotaEnv(t, session.Quotas{CPUMsPerTurn: 50}, charging(10, 10*time.Millisecond))
	requireQuota(t, resultErr(qe.run(t, "a1", "c1")), fault.BudgetExceeded, "acme", "cpu_ms_per_turn")
	res, err := qe.run(t, "b1", "c2")
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
}

// A tenant that spent cpu_ms_per_minute has its charges refused, and its
// new turns too (RateLimit with when to retry), until the minute moves
// on; another tenant is not held back.
func TestQuotaCPUPerMinute(t *testing.T) {
	t.Parallel()
	qe := newQuotaEnv(t, session.Quotas{CPUMsPerMinute: 100}, charging(3, 20*time.Millisecond))
	res, err := qe.run(t, "a1", "c1")
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status, "60 ms of 100")
	requireQuota(t, resultErr(qe.run(t, "a1", "c1")), fault.RateLimit, "acme", "cpu_ms_per_minute")
	l, err := qe.lease(t, "a2", "c2")
	require.NoError(t, err)
	_, err = l.Session().Start(context.Background(), ask("go"))
	requireQuota(t, err, fault.RateLimit, "acme", "cpu_ms_per_minute")
	var qerr *session.QuotaError
	require.ErrorAs(t, err, &qerr)
	assert.Positive(t, qerr.RetryAfter)
	assert.LessOrEqual(t, qerr.RetryAfter, time.Minute)
	res, err = qe.run(t, "b1", "c3")
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, res.Status)
	qe.advance(time.Minute + time.Second)
	res, err = qe.run(t, "a2", "c2")
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, res.Status, "a minute later: %v", res.Err)
}

// publishing publishes n events of a 10-byte payload through the host and
// fails with the first refused one.
func publishing(n int) agent.Engine {
	return agent.EngineFunc(func(ctx context.Context, run agent.Run, h agent.Host, b *agent.Board) (*agent.Board, error) {
		for range n {
			env, err := event.NewEnvelope(ctx, "agent.run."+run.ID+".custom.tick", "0123456789")
			if err != nil {
				return b, err
			}
			if err := h.Publish(ctx, env); err != nil {
				return b, err
			}
		}
		return b, nil
	})
}

// A turn that publishes more events, or more event bytes, than its
// tenant allows is refused at the event past the quota.
func TestQuotaEventsPerTurn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q     session.Quotas
		quota string
	}{
		{session.Quotas{EventsPerTurn: 5}, "events_per_turn"},
		{session.Quotas{EventBytesPerTurn: 50}, "event_bytes_per_turn"},
	} {
		qe := newQuotaEnv(t, tc.q, publishing(20))
		requireQuota(t, resultErr(qe.run(t, "a1", "c1")), fault.BudgetExceeded, "acme", tc.quota)
		res, err := qe.run(t, "b1", "c2")
		require.NoError(t, err)
		assert.Equal(t, agent.StatusCompleted, res.Status, "%s: %v", tc.quota, res.Err)
	}
}

// reporting reports tokens of model usage, as an inference node does.
func reporting(tokens int64) agent.Engine {
	return agent.EngineFunc(func(ctx context.Context, _ agent.Run, h agent.Host, b *agent.Board) (*agent.Board, error) {
		return b, h.ReportUsage(ctx, agent.Usage{TotalTokens: tokens})
	})
}

// A tenant's reported model tokens are bounded per minute: the report
// past the quota is RateLimit, new turns wait for the minute, and another
// tenant is not held back.
func TestQuotaModelTokensPerMinute(t *testing.T) {
	t.Parallel()
	qe := newQuotaEnv(t, session.Quotas{ModelTokensPerMinute: 1000}, reporting(600))
	res, err := qe.run(t, "a1", "c1")
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status)
	requireQuota(t, resultErr(qe.run(t, "a1", "c1")), fault.RateLimit, "acme", "model_tokens_per_minute")
	l, err := qe.lease(t, "a2", "c2")
	require.NoError(t, err)
	_, err = l.Session().Start(context.Background(), ask("go"))
	requireQuota(t, err, fault.RateLimit, "acme", "model_tokens_per_minute")
	for range 3 {
		res, err := qe.run(t, "b1", "c3")
		require.NoError(t, err)
		require.Equal(t, agent.StatusCompleted, res.Status)
	}
}

// Quotas with a negative bound are refused; UpdateQuotas replaces the
// bounds for the next session.
func TestQuotasValidateAndUpdate(t *testing.T) {
	t.Parallel()
	_, err := session.NewManagerWithConfig(newEnv(t, idle).deps(nil, false),
		session.Config{Quotas: map[string]session.Quotas{"acme": {Sessions: -1}}})
	require.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, "sessions")
	qe := newQuotaEnv(t, session.Quotas{Sessions: 1}, idle)
	_, err = qe.lease(t, "a1", "c1")
	require.NoError(t, err)
	_, err = qe.lease(t, "a1", "c2")
	require.True(t, errors.Is(err, fault.BudgetExceeded))
	require.NoError(t, qe.m.UpdateQuotas(map[string]session.Quotas{"acme": {Sessions: 2}}))
	_, err = qe.lease(t, "a1", "c2")
	require.NoError(t, err)
	require.ErrorIs(t, qe.m.UpdateQuotas(map[string]session.Quotas{"acme": {EventsPerTurn: -3}}), fault.Validation)
}
