package observe_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/observe"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func spansNamed(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func newTraced(t *testing.T) (*observe.Observer, *tracetest.InMemoryExporter, func() tracetest.SpanStubs) {
	t.Helper()
	app := newApp(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs, err := observe.New(context.Background(), app, observe.Options{TracerProvider: tp})
	require.NoError(t, err)
	t.Cleanup(func() { _ = obs.Close() })
	_, err = runTurn(t, app, "bot", "conv-1")
	require.NoError(t, err)
	_, boomErr := runTurn(t, app, "boom", "conv-2")
	require.Error(t, boomErr)
	waitFor(t, "two invoke_agent spans", func() bool {
		return len(spansNamed(exp.GetSpans(), "invoke_agent Adder"))+len(spansNamed(exp.GetSpans(), "invoke_agent Boom")) == 2
	})
	return obs, exp, exp.GetSpans
}

// REF 13.2.5–13.2.8: a turn is an invoke_agent span with the GenAI
// attributes and the session as gen_ai.conversation.id; each model call
// is a chat span and each tool call an execute_tool span, children of
// it, with the model, the usage, the tool and the node.
func TestSpansOfATurn(t *testing.T) {
	_, _, get := newTraced(t)
	spans := get()
	runs := spansNamed(spans, "invoke_agent Adder")
	require.Len(t, runs, 1)
	run := runs[0]
	a := attrs(run)
	assert.Equal(t, trace.SpanKindInternal, run.SpanKind)
	assert.Equal(t, "invoke_agent", a["gen_ai.operation.name"].AsString())
	assert.Equal(t, "Adder", a["gen_ai.agent.name"].AsString())
	assert.Equal(t, "bot", a["gen_ai.agent.id"].AsString())
	assert.Equal(t, "conv-1", a["gen_ai.conversation.id"].AsString())
	assert.Equal(t, "acme", a["corral.tenant"].AsString())
	assert.Equal(t, "graph", a["corral.engine"].AsString())
	assert.Equal(t, "adder", a["corral.graph"].AsString())
	assert.Equal(t, "completed", a["corral.status"].AsString())
	assert.Equal(t, int64(18), a["gen_ai.usage.input_tokens"].AsInt64())
	assert.Equal(t, int64(8), a["gen_ai.usage.output_tokens"].AsInt64())
	assert.NotEmpty(t, a["corral.run.id"].AsString())
	assert.Zero(t, a["corral.cpu_ms"].AsFloat64(), "the agent has no script node")
	assert.False(t, run.Parent.IsValid(), "a turn without a caller's trace is a root")
	assert.Equal(t, codes.Unset, run.Status.Code)

	chats := spansNamed(spans, "chat m1")
	require.Len(t, chats, 2)
	for i, c := range chats {
		ca := attrs(c)
		assert.Equal(t, run.SpanContext.SpanID(), c.Parent.SpanID(), "chat %d is a child of the turn", i)
		assert.Equal(t, run.SpanContext.TraceID(), c.SpanContext.TraceID())
		assert.Equal(t, trace.SpanKindClient, c.SpanKind)
		assert.Equal(t, "chat", ca["gen_ai.operation.name"].AsString())
		assert.Equal(t, "m1", ca["gen_ai.request.model"].AsString())
		assert.Equal(t, "model", ca["gen_ai.provider.name"].AsString())
		assert.Equal(t, "model", ca["corral.node.id"].AsString())
		assert.False(t, c.EndTime.Before(c.StartTime))
	}
	in := []int64{attrs(chats[0])["gen_ai.usage.input_tokens"].AsInt64(), attrs(chats[1])["gen_ai.usage.input_tokens"].AsInt64()}
	assert.ElementsMatch(t, []int64{7, 11}, in)

	tools := spansNamed(spans, "execute_tool add")
	require.Len(t, tools, 1)
	ta := attrs(tools[0])
	assert.Equal(t, run.SpanContext.SpanID(), tools[0].Parent.SpanID())
	assert.Equal(t, "execute_tool", ta["gen_ai.operation.name"].AsString())
	assert.Equal(t, "add", ta["gen_ai.tool.name"].AsString())
	assert.Equal(t, "call_1", ta["gen_ai.tool.call.id"].AsString())
	assert.Equal(t, "function", ta["gen_ai.tool.type"].AsString())
	assert.Equal(t, "tools", ta["corral.node.id"].AsString())
	for _, s := range append(chats, tools...) {
		assert.False(t, s.StartTime.Before(run.StartTime), "%s starts inside the turn", s.Name)
		assert.False(t, s.EndTime.After(run.EndTime), "%s ends inside the turn", s.Name)
	}
}

// REF 13.2.9: a failed turn's span has an error status and error.type,
// the error's kind.
func TestSpanOfAFailedTurn(t *testing.T) {
	_, _, get := newTraced(t)
	runs := spansNamed(get(), "invoke_agent Boom")
	require.Len(t, runs, 1)
	a := attrs(runs[0])
	assert.Equal(t, codes.Error, runs[0].Status.Code)
	kind := a["error.type"].AsString()
	_, ok := fault.ParseKind(kind)
	assert.True(t, ok, "error.type %q is a fault kind", kind)
	assert.Equal(t, kind, a["corral.status"].AsString())
	assert.Equal(t, "conv-2", a["gen_ai.conversation.id"].AsString())
	assert.Positive(t, a["corral.cpu_ms"].AsFloat64(), "its script node's time")
}

// REF 13.2.6: a turn started with the caller's trace (ContextWithTrace) is
// a child of the caller's span.
func TestSpanParentFromCaller(t *testing.T) {
	app := newApp(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	obs, err := observe.New(context.Background(), app, observe.Options{TracerProvider: tp})
	require.NoError(t, err)
	defer obs.Close()

	ctx, caller := tp.Tracer("test").Start(context.Background(), "POST /v1/chat/completions")
	lease, err := app.Sessions().Open(ctx, session.Key{AgentID: "one", ContextID: "c1"})
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().Start(observe.ContextWithTrace(ctx), agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi")})
	require.NoError(t, err)
	_, err = turn.Wait(ctx)
	require.NoError(t, err)
	caller.End()
	waitFor(t, "the turn's span", func() bool { return len(spansNamed(exp.GetSpans(), "invoke_agent One")) == 1 })
	run := spansNamed(exp.GetSpans(), "invoke_agent One")[0]
	assert.Equal(t, caller.SpanContext().TraceID(), run.SpanContext.TraceID())
	assert.Equal(t, caller.SpanContext().SpanID(), run.Parent.SpanID())

	plain := context.Background()
	assert.Equal(t, plain, observe.ContextWithTrace(plain), "no span, nothing added")
}
