package observe

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The metric names of HTTPMiddleware.
const (
	MetricHTTPRequests = "corral_http_requests_total"
	MetricHTTPDuration = "corral_http_request_duration_seconds"
)

// httpMetrics counts the requests of HTTPMiddleware, by route pattern (a
// bounded set: the mux's patterns) and status code.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics() httpMetrics {
	return httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricHTTPRequests,
			Help: "HTTP requests served, by route pattern and status code."}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricHTTPDuration,
			Help:    "HTTP request latency, from the request's headers to the handler's return (a stream's whole life).",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"route"}),
	}
}

// traceContext reads a W3C traceparent header: a caller's trace becomes
// the parent of the request's span.
var traceContext propagation.TraceContext

// HTTPMiddleware wraps an http.ServeMux (or a handler that serves one):
// each request gets a server span, named after the route pattern the mux
// matched, with http.request.method, http.route and
// http.response.status_code, a child of the caller's traceparent; the
// request's context carries the span as the runtime's event span
// (ContextWithTrace), so that a turn the request starts is its child. It
// counts the requests and their latency by route (REF 11.6.3).
func (o *Observer) HTTPMiddleware() func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := o.tracer.Start(ctx, httpMethod(r.Method), trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", httpMethod(r.Method))))
			defer span.End()
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			r = r.WithContext(ContextWithTrace(ctx))
			next.ServeHTTP(sw, r)
			route := r.Pattern // set by the mux on the request it was given
			if route == "" {
				route = "unmatched"
			}
			span.SetName(route)
			span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", sw.status))
			if sw.status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(sw.status))
			}
			o.m.http.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
			o.m.http.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		})
	}
}

// statusWriter remembers a response's status; Unwrap lets
// http.ResponseController reach the connection (Flush, write deadlines).
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(b)
}

// Flush flushes the response (a stream's events) when it can.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
