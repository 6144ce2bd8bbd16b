package observe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/corral-rt/corral/observe"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// REF 11.6.3
// HTTPMiddleware names each request's span after the route the mux
// matched, with the status, as a child of the caller's traceparent; a
// turn the request starts is the span's child; streams still flush; the
// requests are counted by route and code.
func TestHTTPMiddleware(t *testing.T) {
	app := newApp(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	reg := prometheus.NewRegistry()
	obs, err := observe.New(context.Background(), app, observe.Options{TracerProvider: tp, Registerer: reg})
	require.NoError(t, err)
	defer obs.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("POST /turns/{ctx}", func(w http.ResponseWriter, r *http.Request) {
		lease, err := app.Sessions().Open(r.Context(), session.Key{AgentID: "one", ContextID: r.PathValue("ctx")})
		require.NoError(t, err)
		defer lease.Close()
		turn, err := lease.Session().Start(r.Context(), agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi")})
		require.NoError(t, err)
		_, err = turn.Wait(r.Context())
		require.NoError(t, err)
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("data: 1\n\n"))
		f, ok := w.(http.Flusher)
		require.True(t, ok, "the wrapped writer still flushes")
		f.Flush()
		require.NoError(t, http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute)), "the connection is reachable")
	})
	hs := httptest.NewServer(obs.HTTPMiddleware()(mux))
	defer hs.Close()

	_, callerSpan := tp.Tracer("test").Start(context.Background(), "client")
	caller := callerSpan.SpanContext()
	req, err := http.NewRequest(http.MethodPost, hs.URL+"/turns/c1", nil)
	require.NoError(t, err)
	req.Header.Set("traceparent", "00-"+caller.TraceID().String()+"-"+caller.SpanID().String()+"-01")
	resp, err := hs.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, err = hs.Client().Get(hs.URL + "/stream")
	require.NoError(t, err)
	resp.Body.Close()
	resp, err = hs.Client().Get(hs.URL + "/nowhere")
	require.NoError(t, err)
	resp.Body.Close()

	waitFor(t, "the turn's span", func() bool { return len(spansNamed(exp.GetSpans(), "invoke_agent One")) == 1 })
	reqSpans := spansNamed(exp.GetSpans(), "POST /turns/{ctx}")
	require.Len(t, reqSpans, 1)
	rs := reqSpans[0]
	assert.Equal(t, trace.SpanKindServer, rs.SpanKind)
	assert.Equal(t, caller.TraceID(), rs.SpanContext.TraceID(), "the caller's trace")
	assert.Equal(t, caller.SpanID(), rs.Parent.SpanID(), "the caller's span is the parent")
	attrs := map[string]string{}
	for _, a := range rs.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	assert.Equal(t, map[string]string{"http.request.method": "POST", "http.route": "POST /turns/{ctx}", "http.response.status_code": "201"}, attrs)
	run := spansNamed(exp.GetSpans(), "invoke_agent One")[0]
	assert.Equal(t, rs.SpanContext.SpanID(), run.Parent.SpanID(), "the turn is the request's child")

	// A request is counted once its handler has returned, which may be
	// after its client read the whole answer.
	for _, c := range [][2]string{{"POST /turns/{ctx}", "201"}, {"GET /stream", "200"}, {"unmatched", "404"}} {
		labels := map[string]string{"route": c[0], "code": c[1]}
		waitFor(t, "the count of "+c[0], func() bool { return counter(t, reg, observe.MetricHTTPRequests, labels) >= 1 })
		assert.Equal(t, 1.0, counter(t, reg, observe.MetricHTTPRequests, labels), "%v", c)
	}
}
