package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/model"
)

// callEvents returns the call events of host's run, in order.
func callEvents(t *testing.T, envs []event.Envelope) ([]event.Envelope, []event.CallPayload) {
	t.Helper()
	var out []event.Envelope
	var ps []event.CallPayload
	for _, env := range envs {
		if env.Subject == event.SubjectModelCall("run-1", event.Actor("bot", "chat")) ||
			env.Subject == event.SubjectToolCall("run-1", event.Actor("bot", "chat")) {
			var p event.CallPayload
			require.NoError(t, env.Decode(&p))
			out, ps = append(out, env), append(ps, p)
		}
	}
	return out, ps
}

// REF 13.4.2: each model call is published once it has ended, with the
// model, the provider, the usage and the finish reason; call_start names
// when it started and the envelope's time when it ended.
func TestModelCallEvent(t *testing.T) {
	t.Parallel()
	doc := "name: chat\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: {model: m1, all_tools: true}\n"
	e := inferenceEngine(t, doc, scriptedProvider(t, weatherReplies), newFakeTools("get_weather"))
	before := time.Now()
	host, _, err := execute(t, e, boardWith(userMessage("weather?")))
	require.NoError(t, err)
	envs, ps := callEvents(t, host.Envelopes())
	require.Len(t, ps, 1)
	assert.Equal(t, event.CallPayload{NodeID: "chat", Graph: "chat", Name: "m1", Provider: "model",
		InputTokens: 20, OutputTokens: 8, TotalTokens: 28, FinishReason: model.FinishToolCalls}, ps[0])
	start, err := time.Parse(time.RFC3339Nano, envs[0].Header(event.HeaderCallStart))
	require.NoError(t, err)
	assert.False(t, start.Before(before.Truncate(time.Microsecond)), "the call started in the run")
	assert.False(t, envs[0].Time.Before(start), "and ended after it started")
	assert.Equal(t, "chat", envs[0].Header(event.HeaderNodeID))
	assert.Equal(t, "run-1", envs[0].Header(event.HeaderRunID))
}

// namedProvider names itself and fails every call with RateLimit.
type namedProvider struct{}

func (namedProvider) ProviderName() string { return "acme-llm" }
func (namedProvider) Generate(context.Context, model.Request, func(model.Delta) error) (model.Response, error) {
	return model.Response{}, fault.New(fault.RateLimit, "generate", "slow down")
}

// REF 13.4.2: a provider that names itself is named; a failed call
// carries its error and kind.
func TestModelCallEventOfAFailedCall(t *testing.T) {
	t.Parallel()
	doc := "name: chat\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: {model: m2}\n"
	e := inferenceEngine(t, doc, namedProvider{}, nil)
	host, _, err := execute(t, e, boardWith(userMessage("hi")))
	require.ErrorIs(t, err, fault.RateLimit)
	_, ps := callEvents(t, host.Envelopes())
	require.Len(t, ps, 1)
	assert.Equal(t, "acme-llm", ps[0].Provider)
	assert.Equal(t, "rate_limit", ps[0].ErrorKind)
	assert.Contains(t, ps[0].Error, "slow down")
}
