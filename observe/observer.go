package observe

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/sandbox/proc"
)

// Options configure an Observer. The zero value is ready: a fresh
// registry, the global tracer provider, slog.Default().
type Options struct {
	// Registerer receives the metrics; nil is a fresh registry.
	// MetricsHandler serves what it gathers when it is also a
	// prometheus.Gatherer (a *prometheus.Registry: the program's own
	// metrics beside the observer's), else the observer's metrics alone.
	Registerer prometheus.Registerer
	// TracerProvider makes the spans; nil is otel.GetTracerProvider(), a
	// no-op unless the program set one (SetupFromEnv).
	TracerProvider trace.TracerProvider
	// Logger receives the observer's own warnings and a debug line per
	// ended turn; nil is slog.Default().
	Logger *slog.Logger
	// MaxLabelValues bounds the distinct values of the tenant and agent
	// labels each (later ones are OtherLabel); 0 is DefaultMaxLabelValues.
	MaxLabelValues int
	// MaxOpenRuns bounds the runs followed at once (their spans are open);
	// past it the oldest is ended early; 0 is DefaultMaxOpenRuns.
	MaxOpenRuns int
}

// DefaultMaxOpenRuns is Options.MaxOpenRuns when it is 0.
const DefaultMaxOpenRuns = 10000

// attachBuffer is the buffer of the observer's attachment; it blocks the
// publisher when full, so that no run end is lost.
const attachBuffer = 4096

// Observer turns a runtime's events into Prometheus metrics and
// OpenTelemetry spans. It is safe for concurrent use.
type Observer struct {
	app     *runtime.Runtime
	log     *slog.Logger
	tracer  trace.Tracer
	m       *metrics
	reg     prometheus.Registerer // where the metrics are registered
	gather  prometheus.Gatherer   // what MetricsHandler serves
	ownReg  bool                  // reg is the fresh registry of a nil Registerer
	tenants *bound
	agents  *bound

	detach     func()
	removeHook func()

	mu       sync.Mutex
	closed   bool
	runs     map[string]*runTrack
	order    []string // run ids in start order, for eviction
	maxRuns  int
	inflight sync.WaitGroup // sink calls in progress

	closeOnce sync.Once
	closeErr  error
}

// New attaches an Observer to app: from now on every run the runtime's
// router carries is counted and traced (REF 13.1.1). ctx bounds the
// attachment: when it ends, the observer stops observing (Close is still
// needed). app must not be nil. A Registerer that already holds the
// metrics (another Observer's, not closed) is a Conflict error.
func New(ctx context.Context, app *runtime.Runtime, opts Options) (*Observer, error) {
	if ctx == nil || app == nil {
		return nil, fault.New(fault.Validation, "observe", "ctx and app must not be nil")
	}
	if opts.MaxLabelValues < 0 || opts.MaxOpenRuns < 0 {
		return nil, fault.New(fault.Validation, "observe", "MaxLabelValues and MaxOpenRuns must be >= 0")
	}
	o := &Observer{app: app, log: opts.Logger, m: newMetrics(), reg: opts.Registerer,
		runs: map[string]*runTrack{}, maxRuns: opts.MaxOpenRuns}
	if o.log == nil {
		o.log = slog.Default()
	}
	if o.maxRuns == 0 {
		o.maxRuns = DefaultMaxOpenRuns
	}
	maxLabels := opts.MaxLabelValues
	if maxLabels == 0 {
		maxLabels = DefaultMaxLabelValues
	}
	o.tenants, o.agents = newBound(maxLabels), newBound(maxLabels)
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	o.tracer = tp.Tracer(instrumentation)
	if err := o.register(); err != nil {
		return nil, err
	}
	detach, err := app.Attach(ctx, event.PatternAllRuns(), event.SinkFunc(o.onEvent),
		event.WithAttachBackpressure(event.Block), event.WithAttachBufferSize(attachBuffer))
	if err != nil {
		o.unregister()
		return nil, fault.Wrap(fault.KindOr(err, fault.NotAvailable), err, "observe", "attach to the runtime")
	}
	o.detach = detach
	o.removeHook = proc.OnWorkerLost(o.workerLost)
	return o, nil
}

// instrumentation is the tracer's instrumentation scope.
const instrumentation = "github.com/corral-rt/corral/observe"

// register registers the metrics on the Registerer (a fresh registry
// when none is given) and chooses what MetricsHandler serves.
func (o *Observer) register() error {
	if o.reg == nil {
		r := prometheus.NewRegistry()
		o.reg, o.gather, o.ownReg = r, r, true
		return registerAll(r, o.m.collectors())
	}
	if err := registerAll(o.reg, o.m.collectors()); err != nil {
		return err
	}
	if g, ok := o.reg.(prometheus.Gatherer); ok {
		o.gather = g
		return nil
	}
	r := prometheus.NewRegistry() // a Registerer that cannot gather: serve the observer's own
	o.gather = r
	return registerAll(r, o.m.collectors())
}

// registerAll registers cs on r, all or none: a collector r already has is
// a Conflict error.
func registerAll(r prometheus.Registerer, cs []prometheus.Collector) error {
	for i, c := range cs {
		if err := r.Register(c); err != nil {
			for _, d := range cs[:i] {
				r.Unregister(d)
			}
			kind := fault.Internal
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				kind = fault.Conflict
			}
			return fault.Wrap(kind, err, "observe", "register metrics")
		}
	}
	return nil
}

// unregister takes the metrics off a Registerer the program gave, so that
// a new Observer may register there.
func (o *Observer) unregister() {
	if o.ownReg {
		return // MetricsHandler keeps serving the last values
	}
	for _, c := range o.m.collectors() {
		o.reg.Unregister(c)
	}
}

// MetricsHandler serves the metrics in the Prometheus text format: all
// that Options.Registerer gathers when it is a prometheus.Gatherer, else
// the observer's (REF 13.1.2).
func (o *Observer) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(o.gather, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// QuotaRejected counts a quota rejection that no run saw: a session or a
// turn refused before it started (a *session.QuotaError from Open or
// Start), or a request a server refused for a tenant's rate. A quota hit
// inside a run is counted from the run's end; do not count it again
// (REF 13.1.3). A quota Corral does not define counts as OtherLabel.
func (o *Observer) QuotaRejected(tenant, quota string) {
	o.m.quota.WithLabelValues(o.tenants.value(tenant), quotaLabel(quota)).Inc()
}

func (o *Observer) workerLost(tenant string) {
	o.m.restarts.WithLabelValues(o.tenants.value(tenant)).Inc()
}

// Close stops observing: it detaches from the runtime, removes the
// worker hook, waits for an event being handled, and ends the spans of
// the runs still open (marked corral.observer.closed). Metrics registered
// on Options.Registerer are unregistered. Close is idempotent and returns
// the first result again (REF 13.1.4).
func (o *Observer) Close() error {
	o.closeOnce.Do(func() {
		o.mu.Lock()
		o.closed = true
		o.mu.Unlock()
		o.detach()
		o.removeHook()
		o.inflight.Wait()
		o.mu.Lock()
		runs := o.runs
		o.runs, o.order = map[string]*runTrack{}, nil
		o.mu.Unlock()
		for _, r := range runs {
			r.abandon("observer closed")
		}
		o.unregister()
	})
	return o.closeErr
}
