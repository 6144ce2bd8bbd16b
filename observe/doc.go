// Package observe turns the events of a Corral runtime into Prometheus
// metrics and OpenTelemetry traces that follow the GenAI semantic
// conventions (docs/observability.md). The runtime never imports it: a
// program (a server, a CLI) attaches it to a built runtime.
//
//	tp, shutdown, err := observe.SetupFromEnv(ctx) // off unless OTEL_* says otherwise
//	defer shutdown(ctx)
//	obs, err := observe.New(ctx, app, observe.Options{TracerProvider: tp})
//	defer obs.Close()
//	mux.Handle("GET /metrics", obs.MetricsHandler())
//	turn, err := lease.Session().Start(observe.ContextWithTrace(r.Context()), req) // the request's span is the turn's parent
//
// # How it observes
//
// New attaches one sink to the runtime's router for every run event
// (agent.run.>), with Block backpressure so that no run end is lost. From
// a run's start and end it counts turns and their latency and makes an
// invoke_agent span; from the call events of the graph engine
// (agent.run.<run>.call.<actor>.model and .tool) it counts tokens and
// calls and makes chat and execute_tool spans, children of the run's.
// Worker processes that calls lose (sandbox/proc.OnWorkerLost) are
// counted by tenant. Labels are bounded: tenant and agent values past
// Options.MaxLabelValues become OtherLabel; no run, session or call id is
// ever a label.
//
// # Lifecycle and concurrency
//
// An Observer is safe for concurrent use. It starts no goroutine of its
// own: the attachment's goroutine is the runtime router's, and ends at
// Close (or when the ctx given to New ends, or the runtime closes). Close
// detaches, removes the worker hook, waits for an event being handled,
// ends the spans still open and unregisters the metrics from
// Options.Registerer; it is idempotent.
//
// # Errors
//
// New refuses a nil ctx or runtime and negative bounds (Validation), a
// Registerer that already holds the metrics (Conflict) and a closed
// runtime (NotAvailable). SetupFromEnv refuses an exporter or protocol it
// does not offer (Validation, naming the variable).
package observe
