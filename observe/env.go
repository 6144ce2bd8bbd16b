package observe

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/corral-rt/corral/fault"
)

// DefaultServiceName is the service.name of the spans when neither
// OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one.
const DefaultServiceName = "corral"

// SetupFromEnv makes the tracer provider the standard OTEL_* environment
// asks for (REF 13.3). Tracing is off — a no-op provider, a shutdown that
// does nothing — unless OTEL_TRACES_EXPORTER is "otlp", or it is unset and
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set;
// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none keep it off. The
// exporter is OTLP over HTTP (protobuf), configured by the exporter's own
// variables (endpoint, headers, timeout, compression, certificates); spans
// are batched, sampled by OTEL_TRACES_SAMPLER, and carry the resource of
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. An exporter or protocol
// it does not offer (grpc, console, ...) is a Validation error naming the
// variable. shutdown flushes the spans and stops the exporter; call it
// before the program exits. SetupFromEnv does not set the global
// provider: pass it in Options.TracerProvider, or to otel.SetTracerProvider.
func SetupFromEnv(ctx context.Context) (trace.TracerProvider, func(context.Context) error, error) {
	off := func(context.Context) error { return nil }
	if on, err := tracingOn(); err != nil || !on {
		return noop.NewTracerProvider(), off, err
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(os.Getenv(v)); p != "" {
			if p != "http/protobuf" {
				return noop.NewTracerProvider(), off, fault.New(fault.Validation, "observe", "%s=%q: only http/protobuf is offered", v, p)
			}
			break
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return noop.NewTracerProvider(), off, fault.Wrap(fault.Validation, err, "observe", "the OTLP trace exporter")
	}
	res, err := resource.Merge(resource.NewSchemaless(serviceName()), resource.Environment())
	if err != nil {
		res = resource.Environment()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// tracingOn reads whether the environment asks for traces.
func tracingOn() (bool, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch e := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); e {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fault.New(fault.Validation, "observe", "OTEL_TRACES_EXPORTER=%q: only otlp and none are offered", e)
	}
}

// serviceName is the default service.name, which the environment's
// resource overrides.
func serviceName() attribute.KeyValue { return attribute.String("service.name", DefaultServiceName) }
