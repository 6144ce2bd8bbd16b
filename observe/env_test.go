package observe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/observe"
)

// clearOTEL unsets the variables SetupFromEnv reads, for this test.
func clearOTEL(t *testing.T) {
	for _, v := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(v, "")
	}
}

// REF 13.3.1, 13.3.2: tracing is off unless OTEL_* asks for it, and what
// it does not offer is a Validation error naming the variable.
func TestSetupFromEnvOffAndRefusals(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		bad  string // the variable the error names; "" when off without error
	}{
		{name: "nothing set"},
		{name: "exporter none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
		{name: "sdk disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, bad: "OTEL_TRACES_EXPORTER"},
		{name: "grpc", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			bad: "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clearOTEL(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			tp, shutdown, err := observe.SetupFromEnv(context.Background())
			require.NotNil(t, tp)
			require.NotNil(t, shutdown)
			assert.NoError(t, shutdown(context.Background()))
			_, isNoop := tp.(noop.TracerProvider)
			assert.True(t, isNoop, "tracing stays off: %T", tp)
			if tt.bad == "" {
				assert.NoError(t, err)
				return
			}
			assert.True(t, fault.Is(err, fault.Validation), "%v", err)
			assert.ErrorContains(t, err, tt.bad)
		})
	}
}

// REF 13.3.3: with an OTLP endpoint set, spans are exported over OTLP/HTTP
// to it, at the latest when shutdown flushes them.
func TestSetupFromEnvExportsOTLP(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	clearOTEL(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	tp, shutdown, err := observe.SetupFromEnv(context.Background())
	require.NoError(t, err)
	_, span := tp.Tracer("test").Start(context.Background(), "invoke_agent test")
	span.End()
	require.NoError(t, shutdown(context.Background()))
	assert.Positive(t, posts.Load(), "the batch reached the collector")
}
