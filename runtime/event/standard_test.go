package event_test

import (
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 4.4.1
func TestStandardSubjects(t *testing.T) {
	t.Parallel()
	actor := event.Actor("bot", "n1")
	assert.Equal(t, "bot_node_n1", actor)
	assert.Equal(t, "agent.run.", event.SubjectPrefixRun)
	cases := map[string]string{
		event.SubjectRunStart("r1"):                "agent.run.r1.start",
		event.SubjectRunEnd("r1"):                  "agent.run.r1.end",
		event.SubjectStepStart("r1", actor):        "agent.run.r1.step.bot_node_n1.start",
		event.SubjectStepComplete("r1", actor):     "agent.run.r1.step.bot_node_n1.complete",
		event.SubjectStepError("r1", actor):        "agent.run.r1.step.bot_node_n1.error",
		event.SubjectStreamDelta("r1", actor):      "agent.run.r1.stream.bot_node_n1.delta",
		event.SubjectParallelFork("r1"):            "agent.run.r1.parallel.fork",
		event.SubjectParallelJoin("r1"):            "agent.run.r1.parallel.join",
		event.SubjectPromptRequested("r1"):         "agent.run.r1.prompt.requested",
		event.SubjectPromptResolved("r1"):          "agent.run.r1.prompt.resolved",
		event.SubjectAgentRegistered("qa"):         "runtime.agent.qa.registered",
		event.SubjectAgentRemoved("qa"):            "runtime.agent.qa.removed",
		event.SubjectRebuildStarted():              "runtime.rebuild.started",
		event.SubjectRebuildCompleted():            "runtime.rebuild.completed",
		event.SubjectRebuildFailed():               "runtime.rebuild.failed",
		event.SubjectRunStart("r.1*>"):             "agent.run.r_1__.start",
		event.SubjectStepStart("", "a.b"):          "agent.run._.step.a_b.start",
		event.SubjectAgentRegistered("team.qa"):    "runtime.agent.team_qa.registered",
		event.SubjectStreamDelta("r1", "x.node.>"): "agent.run.r1.stream.x_node__.delta",
	}
	for got, want := range cases {
		assert.Equal(t, want, got)
		assert.NoError(t, event.ValidateSubject(got), "%q", got)
	}
}

// REF 4.4.1
func TestActorIsOneSegment(t *testing.T) {
	t.Parallel()
	// A dotted agent id cannot leak into the subject's structure: filter by
	// agent with the agent_id header.
	actor := event.Actor("team.bot", "n.1")
	assert.Equal(t, "team_bot_node_n_1", actor)
	s := event.SubjectStepStart("r1", actor)
	assert.True(t, event.Match("agent.run.r1.step.*.start", s))
	assert.False(t, event.Match("agent.run.r1.step.team.>", s))
}

// REF 4.4.2
func TestStandardPatterns(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "agent.run.r1.>", event.PatternRun("r1"))
	assert.Equal(t, "agent.run.>", event.PatternAllRuns())
	assert.Equal(t, "agent.run.r1.step.>", event.PatternRunSteps("r1"))
	assert.Equal(t, "agent.run.r1.stream.>", event.PatternRunStream("r1"))
	assert.Equal(t, "runtime.agent.>", event.PatternAgentLifecycle())
	assert.Equal(t, "runtime.rebuild.>", event.PatternRuntimeRebuild())
	assert.Equal(t, "agent.run.r_1.>", event.PatternRun("r.1"))

	actor := event.Actor("bot", "n1")
	cases := []struct {
		pattern string
		subject string
		want    bool
	}{
		{event.PatternRun("r1"), event.SubjectRunStart("r1"), true},
		{event.PatternRun("r1"), event.SubjectRunStart("r2"), false},
		{event.PatternAllRuns(), event.SubjectStepError("r9", actor), true},
		{event.PatternRunSteps("r1"), event.SubjectStepComplete("r1", actor), true},
		{event.PatternRunSteps("r1"), event.SubjectStreamDelta("r1", actor), false},
		{event.PatternRunStream("r1"), event.SubjectStreamDelta("r1", actor), true},
		{event.PatternRunStream("r1"), event.SubjectRunEnd("r1"), false},
		{event.PatternAgentLifecycle(), event.SubjectAgentRemoved("qa"), true},
		{event.PatternAgentLifecycle(), event.SubjectRebuildFailed(), false},
		{event.PatternRuntimeRebuild(), event.SubjectRebuildCompleted(), true},
	}
	for _, c := range cases {
		require.NoError(t, event.ValidatePattern(c.pattern))
		assert.Equal(t, c.want, event.Match(c.pattern, c.subject), "%q ~ %q", c.pattern, c.subject)
	}
}

// REF 4.4.2
func TestIsStreamDelta(t *testing.T) { // not parallel: AllocsPerRun
	cases := map[string]bool{
		event.SubjectStreamDelta("r1", event.Actor("bot", "n1")): true,
		"agent.run.stream.stream.x.delta":                        true,
		"agent.run.r1.stream.a.delta":                            true,
		"agent.run.r1.stream.a.b.delta":                          false,
		"agent.run.r1.x.stream.a.delta":                          false,
		"agent.run.r1.stream.delta":                              false,
		"agent.run.r1.step.a.delta":                              false,
		"agent.run..stream.a.delta":                              false,
		"agent.run.r1.stream..delta":                             false,
		"engine.run.r1.stream.a.delta":                           false,
		"agent.run.r1.stream.a.deltas":                           false,
		"":                                                       false,
	}
	for s, want := range cases {
		assert.Equal(t, want, event.IsStreamDelta(s), "%q", s)
	}
	allocs := testing.AllocsPerRun(100, func() { event.IsStreamDelta("agent.run.r1.stream.a.delta") })
	assert.Zero(t, allocs, "IsStreamDelta checks the string only")
}

// REF 4.4
func TestStandardPayloadShapes(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(event.StepPayload{NodeID: "n1", Graph: "g", Skipped: true})
	require.NoError(t, err)
	assert.JSONEq(t, `{"node_id":"n1","graph":"g","skipped":true}`, string(b))
	b, err = json.Marshal(event.RunPayload{Graph: "g", Error: "boom", RequestID: "q"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"graph":"g","error":"boom","request_id":"q"}`, string(b))
	b, err = json.Marshal(event.ParallelPayload{ForkID: "f", Branches: []string{"a", "b"}, Graph: "g"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"fork_id":"f","branches":["a","b"],"graph":"g"}`, string(b))
}

// REF 4.4.3
func TestStreamDeltaValidate(t *testing.T) {
	t.Parallel()
	part := message.TextPart("hi")
	outs := []event.ProviderOutput{{Provider: "openai", Extension: "logprobs", Value: json.RawMessage(`[]`)}}
	cases := []struct {
		name  string
		delta event.StreamDeltaPayload
		err   string // "" when valid
	}{
		{"part delta", event.StreamDeltaPayload{Type: event.DeltaPart, Part: &part}, ""},
		{"part delta without part", event.StreamDeltaPayload{Type: event.DeltaPart}, "needs part"},
		{"finish", event.StreamDeltaPayload{Type: event.DeltaFinish, FinishReason: "stop"}, ""},
		{"finish without reason", event.StreamDeltaPayload{Type: event.DeltaFinish}, "needs finish_reason"},
		{"provider outputs", event.StreamDeltaPayload{Type: event.DeltaProviderOutputs, ProviderOutputs: outs}, ""},
		{"provider outputs empty", event.StreamDeltaPayload{Type: event.DeltaProviderOutputs}, "needs provider_outputs"},
		{"branch accept", event.StreamDeltaPayload{Type: event.DeltaParallelBranchAccept, ForkID: "f", BranchID: "b"}, ""},
		{"branch cancel", event.StreamDeltaPayload{Type: event.DeltaParallelBranchCancel, ForkID: "f", BranchID: "b", Reason: "lost"}, ""},
		{"branch accept without branch", event.StreamDeltaPayload{Type: event.DeltaParallelBranchAccept, ForkID: "f"}, "needs fork_id and branch_id"},
		{"branch cancel without fork", event.StreamDeltaPayload{Type: event.DeltaParallelBranchCancel, BranchID: "b"}, "needs fork_id and branch_id"},
		{"branch accept with part", event.StreamDeltaPayload{Type: event.DeltaParallelBranchAccept, ForkID: "f", BranchID: "b", Part: &part}, "must not carry part"},
		{"speculative part", event.StreamDeltaPayload{Type: event.DeltaPart, Part: &part, Speculative: true, ForkID: "f", BranchID: "b"}, ""},
		{"speculative part without ids", event.StreamDeltaPayload{Type: event.DeltaPart, Part: &part, Speculative: true, ForkID: "f"}, "speculative"},
		{"non-speculative part with ids", event.StreamDeltaPayload{Type: event.DeltaPart, Part: &part, BranchID: "b"}, "non-speculative"},
		{"custom type", event.StreamDeltaPayload{Type: "usage", Payload: json.RawMessage(`{"tokens":3}`)}, ""},
		{"custom speculative without ids", event.StreamDeltaPayload{Type: "usage", Speculative: true}, "speculative"},
		{"missing type", event.StreamDeltaPayload{Part: &part}, "type is required"},
	}
	for _, c := range cases {
		err := c.delta.Validate()
		if c.err == "" {
			assert.NoError(t, err, c.name)
			continue
		}
		assert.ErrorIs(t, err, fault.Validation, c.name)
		assert.ErrorContains(t, err, c.err, c.name)
	}
	assert.True(t, event.DeltaParallelBranchCancel.IsControl())
	assert.False(t, event.DeltaPart.IsControl())
}

// REF 4.4.3
func TestStreamDeltaJSON(t *testing.T) {
	t.Parallel()
	part := message.TextPart("he")
	d := event.StreamDeltaPayload{
		Type: event.DeltaPart, Part: &part, Speculative: true, ForkID: "f", BranchID: "b",
		RequestID: "q1", ResponseID: "p1",
	}
	b, err := json.Marshal(d)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"part","part":{"type":"text","text":"he"},"speculative":true,
		"fork_id":"f","branch_id":"b","request_id":"q1","response_id":"p1"}`, string(b))

	var all event.StreamDeltaPayload
	require.NoError(t, json.Unmarshal([]byte(`{"type":"x","payload":{"a":1},"reason":"r","finish_reason":"stop",
		"provider_outputs":[{"provider":"p","extension":"e","value":1}]}`), &all))
	assert.Equal(t, event.DeltaType("x"), all.Type)
	assert.JSONEq(t, `{"a":1}`, string(all.Payload))
	assert.Equal(t, "r", all.Reason)
	assert.Equal(t, "stop", all.FinishReason)
	assert.Equal(t, []event.ProviderOutput{{Provider: "p", Extension: "e", Value: json.RawMessage(`1`)}}, all.ProviderOutputs)
}
