package observe

import (
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// The metric names (docs/observability.md lists them with their labels).
const (
	MetricTurnsStarted   = "corral_turns_started_total"
	MetricTurnsEnded     = "corral_turns_ended_total"
	MetricTurnsRunning   = "corral_turns_running"
	MetricTurnDuration   = "corral_turn_duration_seconds"
	MetricQuotaRejected  = "corral_quota_rejections_total"
	MetricWorkerRestarts = "corral_worker_restarts_total"
	MetricModelTokens    = "corral_model_tokens_total"
	MetricModelCalls     = "corral_model_calls_total"
	MetricToolCalls      = "corral_tool_calls_total"
	MetricScriptCPU      = "corral_script_cpu_seconds_total"
)

// OtherLabel is the label value that stands for every value past a
// label's bound (Options.MaxLabelValues), and for a quota or a status
// that Corral does not define.
const OtherLabel = "_other"

// maxLabelLen is the longest tenant or agent label value; a longer one,
// or one that is not UTF-8, is OtherLabel.
const maxLabelLen = 128

// DefaultMaxLabelValues is Options.MaxLabelValues when it is 0.
const DefaultMaxLabelValues = 200

// metrics holds the collectors of one Observer.
type metrics struct {
	started, ended, quota, restarts, tokens, models, tools, cpu *prometheus.CounterVec
	running                                                     *prometheus.GaugeVec
	duration                                                    *prometheus.HistogramVec
	http                                                        httpMetrics
}

func newMetrics() *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	return &metrics{
		http:     newHTTPMetrics(),
		started:  counter(MetricTurnsStarted, "Turns (agent runs) started.", "tenant", "agent"),
		ended:    counter(MetricTurnsEnded, "Turns (agent runs) ended, by status: completed or the error's kind.", "tenant", "agent", "status"),
		quota:    counter(MetricQuotaRejected, "Quota rejections, by quota.", "tenant", "quota"),
		restarts: counter(MetricWorkerRestarts, "Script worker processes lost under a call and replaced.", "tenant"),
		tokens:   counter(MetricModelTokens, "Model tokens reported by model calls, by type: input or output.", "tenant", "type"),
		models:   counter(MetricModelCalls, "Model calls, by status: ok or the error's kind.", "tenant", "status"),
		cpu:      counter(MetricScriptCPU, "Script time of script nodes: CPU time in worker processes, else the calls' durations.", "tenant"),
		tools:    counter(MetricToolCalls, "Tool calls, by status: ok, error (the result is an error) or the batch error's kind.", "tenant", "status"),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricTurnsRunning,
			Help: "Turns (agent runs) running now, as far as the observer saw them start."}, []string{"tenant"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricTurnDuration,
			Help:    "Turn (agent run) latency, from run start to run end.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}}, []string{"tenant", "agent"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.started, m.ended, m.running, m.duration, m.quota, m.restarts, m.tokens, m.models, m.tools, m.cpu,
		m.http.requests, m.http.duration}
}

// bound keeps the values of one label to at most max distinct ones: the
// first max seen pass, later new ones become OtherLabel. It keeps a
// tenant or an agent id that a document or a registration chose from
// growing a series without end.
type bound struct {
	max int

	mu   sync.Mutex
	seen map[string]struct{}
}

func newBound(max int) *bound { return &bound{max: max, seen: map[string]struct{}{}} }

func (b *bound) value(v string) string {
	if v == "" || len(v) > maxLabelLen || !utf8.ValidString(v) {
		return OtherLabel // a label value must be UTF-8; a long one is no name
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[v]; ok {
		return v
	}
	if len(b.seen) >= b.max {
		return OtherLabel
	}
	b.seen[v] = struct{}{}
	return v
}

// quotaNames are the quotas of session.Quotas: the quota label takes
// these, or OtherLabel.
var quotaNames = map[string]bool{
	"sessions": true, "concurrent_turns": true, "cpu_ms_per_turn": true, "cpu_ms_per_minute": true,
	"memory_per_worker": true, "events_per_turn": true, "event_bytes_per_turn": true,
	"model_tokens_per_minute": true,
}

func quotaLabel(q string) string {
	if quotaNames[q] {
		return q
	}
	return OtherLabel
}
