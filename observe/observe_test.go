package observe_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/observe"
	"github.com/corral-rt/corral/runtime/session"
)

// waitFor polls cond until it holds: the observer handles events on the
// router's goroutine, after the turn that published them has returned.
// It fails the test after a generous bound rather than hang.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for range 3000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func counter(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue metric
				}
			}
			if len(got) != len(labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func ended(t testing.TB, reg *prometheus.Registry) float64 {
	total := 0.0
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == observe.MetricTurnsEnded {
			for _, m := range mf.GetMetric() {
				total += m.Counter.GetValue()
			}
		}
	}
	return total
}

// REF 13.1.1, 13.2.1, 13.2.2: real turns of a graph agent count turns by
// tenant, agent and status, their latency, the model tokens and calls
// and the tool calls; the handler serves them in the text format.
func TestMetricsOfRealTurns(t *testing.T) {
	app := newApp(t)
	reg := prometheus.NewRegistry()
	own := prometheus.NewCounter(prometheus.CounterOpts{Name: "app_requests_total", Help: "The program's own."})
	reg.MustRegister(own)
	obs, err := observe.New(context.Background(), app, observe.Options{Registerer: reg})
	require.NoError(t, err)
	defer obs.Close()

	for _, c := range []string{"c1", "c2"} {
		res, err := runTurn(t, app, "bot", c)
		require.NoError(t, err)
		require.Equal(t, "completed", string(res.Status))
	}
	_, boomErr := runTurn(t, app, "boom", "c1")
	require.Error(t, boomErr)
	boomKind := fault.KindOf(boomErr).String()
	require.NotEmpty(t, boomKind)
	waitFor(t, "three ended turns", func() bool { return ended(t, reg) == 3 })

	acmeBot := map[string]string{"tenant": "acme", "agent": "bot"}
	assert.Equal(t, 2.0, counter(t, reg, observe.MetricTurnsStarted, acmeBot))
	assert.Equal(t, 2.0, counter(t, reg, observe.MetricTurnsEnded, map[string]string{"tenant": "acme", "agent": "bot", "status": "completed"}))
	assert.Equal(t, 1.0, counter(t, reg, observe.MetricTurnsEnded, map[string]string{"tenant": "acme", "agent": "boom", "status": boomKind}))
	assert.Equal(t, 2.0, counter(t, reg, observe.MetricTurnDuration, acmeBot), "one latency sample per turn")
	assert.Equal(t, 0.0, counter(t, reg, observe.MetricTurnsRunning, map[string]string{"tenant": "acme"}))
	assert.Equal(t, 36.0, counter(t, reg, observe.MetricModelTokens, map[string]string{"tenant": "acme", "type": "input"}), "2 turns x (7 + 11)")
	assert.Equal(t, 16.0, counter(t, reg, observe.MetricModelTokens, map[string]string{"tenant": "acme", "type": "output"}), "2 turns x (3 + 5)")
	assert.Equal(t, 4.0, counter(t, reg, observe.MetricModelCalls, map[string]string{"tenant": "acme", "status": "ok"}))
	assert.Equal(t, 2.0, counter(t, reg, observe.MetricToolCalls, map[string]string{"tenant": "acme", "status": "ok"}))
	assert.Positive(t, counter(t, reg, observe.MetricScriptCPU, map[string]string{"tenant": "acme"}), "boom's script node")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP corral_turns_started_total Turns (agent runs) started.
# TYPE corral_turns_started_total counter
corral_turns_started_total{agent="bot",tenant="acme"} 2
corral_turns_started_total{agent="boom",tenant="acme"} 1
# HELP corral_model_tokens_total Model tokens reported by model calls, by type: input or output.
# TYPE corral_model_tokens_total counter
corral_model_tokens_total{tenant="acme",type="input"} 36
corral_model_tokens_total{tenant="acme",type="output"} 16
`), observe.MetricTurnsStarted, observe.MetricModelTokens))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems, "metric names and help follow the Prometheus conventions")

	rec := httptest.NewRecorder()
	obs.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	assert.Contains(t, string(body), `corral_turns_ended_total{agent="bot",status="completed",tenant="acme"} 2`)
	assert.Contains(t, string(body), `corral_turn_duration_seconds_count{agent="bot",tenant="acme"} 2`)
	assert.Contains(t, string(body), "app_requests_total 0", "the handler serves the Registerer's other metrics too")
}

// REF 13.1.3, 13.2.3: a quota hit inside a run is counted from the run's
// end, by tenant and quota; QuotaRejected counts a refusal before a run.
func TestQuotaRejections(t *testing.T) {
	app := newApp(t)
	reg := prometheus.NewRegistry()
	obs, err := observe.New(context.Background(), app, observe.Options{Registerer: reg})
	require.NoError(t, err)
	defer obs.Close()

	_, err = runTurn(t, app, "capped", "c1")
	require.Error(t, err, "the model call's usage passes model_tokens_per_minute")
	waitFor(t, "the capped turn's end", func() bool { return ended(t, reg) == 1 })
	labels := map[string]string{"tenant": "tight", "quota": "model_tokens_per_minute"}
	assert.Equal(t, 1.0, counter(t, reg, observe.MetricQuotaRejected, labels))

	_, err = runTurn(t, app, "capped", "c2")
	var qe *session.QuotaError
	require.True(t, errors.As(err, &qe), "the next Start is refused: %v", err)
	obs.QuotaRejected(qe.Tenant, qe.Quota)
	assert.Equal(t, 2.0, counter(t, reg, observe.MetricQuotaRejected, labels))

	obs.QuotaRejected("tight", "not_a_quota")
	assert.Equal(t, 1.0, counter(t, reg, observe.MetricQuotaRejected, map[string]string{"tenant": "tight", "quota": observe.OtherLabel}))
}

// REF 13.2.4: tenant and agent labels are bounded, and no label carries
// an id that grows with traffic (run, session, call).
func TestLabelCardinalityBounded(t *testing.T) {
	app := newApp(t)
	reg := prometheus.NewRegistry()
	obs, err := observe.New(context.Background(), app, observe.Options{Registerer: reg, MaxLabelValues: 1})
	require.NoError(t, err)
	defer obs.Close()
	for i, agentID := range []string{"one", "bot", "one", "bot"} {
		_, err := runTurn(t, app, agentID, "ctx-"+string(rune('a'+i)))
		require.NoError(t, err)
	}
	waitFor(t, "four ended turns", func() bool { return ended(t, reg) == 4 })
	assert.Equal(t, 2.0, counter(t, reg, observe.MetricTurnsStarted, map[string]string{"tenant": "acme", "agent": "one"}))
	assert.Equal(t, 2.0, counter(t, reg, observe.MetricTurnsStarted, map[string]string{"tenant": "acme", "agent": observe.OtherLabel}))

	allowed := map[string]bool{"tenant": true, "agent": true, "status": true, "quota": true, "type": true}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	series := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			series++
			for _, lp := range m.GetLabel() {
				assert.True(t, allowed[lp.GetName()], "label %s of %s", lp.GetName(), mf.GetName())
				assert.False(t, strings.HasPrefix(lp.GetValue(), "ctx-"), "a context id as a label value")
			}
		}
	}
	assert.LessOrEqual(t, series, 12, "series after four turns of two agents")
}

// REF 13.1.4: Close stops observing, is idempotent, lets the router's
// goroutine for the observer end, unregisters the metrics (a new
// Observer may register on the same Registerer) and a second Observer on
// a Registerer that holds them is a Conflict.
func TestCloseStopsEverything(t *testing.T) {
	app := newApp(t)
	_, err := runTurn(t, app, "one", "warm") // the runtime's own goroutines, started once
	require.NoError(t, err)
	before := goruntime.NumGoroutine()
	reg := prometheus.NewRegistry()
	obs, err := observe.New(context.Background(), app, observe.Options{Registerer: reg})
	require.NoError(t, err)
	_, err = observe.New(context.Background(), app, observe.Options{Registerer: reg})
	assert.True(t, fault.Is(err, fault.Conflict), "%v", err)

	_, err = runTurn(t, app, "one", "c1")
	require.NoError(t, err)
	waitFor(t, "the turn's end", func() bool { return ended(t, reg) == 1 })
	require.NoError(t, obs.Close())
	require.NoError(t, obs.Close())
	waitFor(t, "the observer's goroutines to end", func() bool { return goruntime.NumGoroutine() <= before })

	_, err = runTurn(t, app, "one", "c2")
	require.NoError(t, err)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	assert.Empty(t, mfs, "Close unregistered the metrics")

	obs2, err := observe.New(context.Background(), app, observe.Options{Registerer: reg})
	require.NoError(t, err, "the Registerer is free again")
	require.NoError(t, obs2.Close())
}

// New refuses what it cannot use.
func TestNewRefusesBadInput(t *testing.T) {
	app := newApp(t)
	//lint:ignore SA1012 the nil ctx is the point
	_, err := observe.New(nil, app, observe.Options{}) //nolint:staticcheck
	assert.True(t, fault.Is(err, fault.Validation), "%v", err)
	_, err = observe.New(context.Background(), nil, observe.Options{})
	assert.True(t, fault.Is(err, fault.Validation), "%v", err)
	_, err = observe.New(context.Background(), app, observe.Options{MaxOpenRuns: -1})
	assert.True(t, fault.Is(err, fault.Validation), "%v", err)
	require.NoError(t, app.Close())
	_, err = observe.New(context.Background(), app, observe.Options{})
	assert.True(t, fault.Is(err, fault.NotAvailable), "%v", err)
}

func scrape(t *testing.T, obs *observe.Observer) string {
	t.Helper()
	rec := httptest.NewRecorder()
	obs.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// REF 13.1.2: without a Registerer the handler serves a fresh registry,
// still after Close; with a Registerer that cannot gather, it serves the
// observer's metrics, which are registered there too.
func TestMetricsHandlerSources(t *testing.T) {
	app := newApp(t)
	obs, err := observe.New(context.Background(), app, observe.Options{})
	require.NoError(t, err)
	_, err = runTurn(t, app, "one", "c1")
	require.NoError(t, err)
	want := `corral_turns_ended_total{agent="one",status="completed",tenant="acme"} 1`
	waitFor(t, "the turn's end", func() bool { return strings.Contains(scrape(t, obs), want) })
	require.NoError(t, obs.Close())
	assert.Contains(t, scrape(t, obs), want, "the last values after Close")

	inner := prometheus.NewRegistry()
	wrapped := prometheus.WrapRegistererWithPrefix("app_", inner)
	obs2, err := observe.New(context.Background(), app, observe.Options{Registerer: wrapped})
	require.NoError(t, err)
	defer obs2.Close()
	_, err = runTurn(t, app, "one", "c2")
	require.NoError(t, err)
	waitFor(t, "the second turn's end", func() bool { return strings.Contains(scrape(t, obs2), want) })
	assert.Equal(t, 1.0, counter(t, inner, "app_"+observe.MetricTurnsEnded,
		map[string]string{"tenant": "acme", "agent": "one", "status": "completed"}), "registered through the wrapper")
}
