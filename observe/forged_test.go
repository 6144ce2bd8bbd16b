package observe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/corral-rt/corral/observe"
	"github.com/corral-rt/corral/runtime"
)

// forgerDoc has one agent of tenant acme whose script publishes custom
// events under subjects shaped like the runtime's call events
// (agent.run.<run>.custom.call.model, ...): a script may publish in its
// run's custom namespace, not speak for the engine.
const forgerDoc = `
version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  js: {kind: sandbox.Runtime, impl: js}
agents:
  forger:
    tenant: acme
    card: {name: Forger}
    capabilities: [publish]
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js}
      settings:
        graph:
          name: forger
          entry: s
          nodes:
            - id: s
              type: script
              config:
                source: |
                  const big = "x".repeat(60000);
                  host.publish("call.model", {name: big, provider: big, input_tokens: 1000000000000, output_tokens: 1000000000000});
                  host.publish("call.tool", {name: big, tool_call_id: big, error: "forged"});
                  host.publish("x.call.y.model", {name: big, input_tokens: 5});
          edges: [{from: s, to: __end__}]
runtime:
  event_bus: events
  tenants:
    acme: {}
`

// REF 13.2.12
// A script's custom events, whatever their subject's tail, are neither
// model nor tool calls: they add no tokens, no calls and no chat or
// execute_tool span.
func TestCustomEventsAreNotCalls(t *testing.T) {
	t.Parallel()
	app, reg, exp := observed(t, forgerDoc)

	_, err := runTurn(t, app, "forger", "c1")
	require.NoError(t, err)
	waitFor(t, "the turn's span", func() bool { return len(spansNamed(exp.GetSpans(), "invoke_agent Forger")) == 1 })

	for _, typ := range []string{"input", "output"} {
		assert.Zero(t, counter(t, reg, observe.MetricModelTokens, map[string]string{"tenant": "acme", "type": typ}), typ)
	}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		assert.NotContains(t, []string{observe.MetricModelCalls, observe.MetricToolCalls, observe.MetricModelTokens}, mf.GetName(),
			"a custom event counted as a call")
	}
	for _, s := range exp.GetSpans() {
		assert.False(t, strings.HasPrefix(s.Name, "chat") || strings.HasPrefix(s.Name, "execute_tool"), "span %.40q", s.Name)
	}
	run := spansNamed(exp.GetSpans(), "invoke_agent Forger")[0]
	assert.Zero(t, attrs(run)[observe.KeyInputTokens].AsInt64(), "the turn's input tokens")
}

// liarDoc has one agent of tenant acme whose script throws an error that
// reads like a quota refusal.
const liarDoc = `
version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  js: {kind: sandbox.Runtime, impl: js}
agents:
  liar:
    tenant: acme
    card: {name: Liar}
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js}
      settings:
        graph:
          name: liar
          entry: s
          nodes:
            - id: s
              type: script
              config:
                source: |
                  throw new Error('tenant "acme": quota concurrent_turns of 8 reached');
          edges: [{from: s, to: __end__}]
runtime:
  event_bus: events
  tenants:
    acme: {}
`

// REF 13.2.3
// A run's error counts as a quota refusal only when its kind is a
// quota's (rate_limit, budget_exceeded): a script that throws the text of
// one counts no rejection and puts no corral.quota on its span.
func TestThrownQuotaTextIsNoQuota(t *testing.T) {
	t.Parallel()
	app, reg, exp := observed(t, liarDoc)

	_, err := runTurn(t, app, "liar", "c1")
	require.Error(t, err)
	waitFor(t, "the turn's span", func() bool { return len(spansNamed(exp.GetSpans(), "invoke_agent Liar")) == 1 })
	assert.Zero(t, counter(t, reg, observe.MetricQuotaRejected, map[string]string{"tenant": "acme", "quota": "concurrent_turns"}))
	run := spansNamed(exp.GetSpans(), "invoke_agent Liar")[0]
	_, has := attrs(run)[observe.KeyQuota]
	assert.False(t, has, "the span names no quota")
}

// observed builds the document text and observes it with metrics on a
// registry of its own and spans kept in memory, all closed when the test
// ends.
func observed(t *testing.T, text string) (*runtime.Runtime, *prometheus.Registry, *tracetest.InMemoryExporter) {
	t.Helper()
	app := buildApp(t, text)
	reg := prometheus.NewRegistry()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs, err := observe.New(context.Background(), app, observe.Options{Registerer: reg, TracerProvider: tp})
	require.NoError(t, err)
	t.Cleanup(func() { _ = obs.Close() })
	return app, reg, exp
}
