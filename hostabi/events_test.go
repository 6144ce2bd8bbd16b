package hostabi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 5.4, REF 9.M5: host.publish is confined to the run's own
// agent.run.<run>.custom.> namespace; a script cannot forge another run's
// events, runtime events or prompt events, and the suffix must be a valid
// subject tail.
func TestPublishConfinement(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", event.MaxSubjectLen-len("agent.run.r1.custom."))
	accepted := []struct{ suffix, subject string }{
		{"progress", "agent.run.r1.custom.progress"},
		{"a.b.c", "agent.run.r1.custom.a.b.c"},
		{"agent.run.other.end", "agent.run.r1.custom.agent.run.other.end"},
		{"runtime.agent.x.registered", "agent.run.r1.custom.runtime.agent.x.registered"},
		{"runtime.rebuild.failed", "agent.run.r1.custom.runtime.rebuild.failed"},
		{"prompt.requested", "agent.run.r1.custom.prompt.requested"},
		{"stream.bot_node_n1.delta", "agent.run.r1.custom.stream.bot_node_n1.delta"},
		{"Ünïcode-segment", "agent.run.r1.custom.Ünïcode-segment"},
		{long, "agent.run.r1.custom." + long},
	}
	r := newRecorder()
	d := newDispatcher(r.fullHost(), []string{agent.CapPublish}, nil, sandbox.Limits{})
	for _, a := range accepted {
		args, _ := json.Marshal([]any{a.suffix, map[string]int{"n": 1}})
		_, err := call(t, d, hostabi.FuncPublish, string(args))
		require.NoError(t, err, a.suffix)
	}
	envs := r.envelopes()
	require.Len(t, envs, len(accepted))
	own := event.MustCompilePattern("agent.run.r1.custom.>")
	for i, env := range envs {
		assert.Equal(t, accepted[i].subject, env.Subject)
		assert.True(t, own.Match(env.Subject), env.Subject)
		assert.False(t, event.IsStreamDelta(env.Subject), env.Subject)
		assert.Equal(t, map[string]string{"run_id": "r1", "agent_id": "bot", "node_id": "n1"}, env.Headers)
		assert.JSONEq(t, `{"n":1}`, string(env.Payload))
		assert.NotEmpty(t, env.ID)
	}

	refused := []string{
		"", ".", "..", "a..b", ".a", "a.", "*", ">", "a.*", "a.>", "a*", "a>b", "*.end", "agent.run.*.end",
		"x" + long, strings.Repeat("a.", 600) + "a",
		// whitespace, control and zero-width characters: a token that
		// prints like another, or like two
		"a b", "a\tb", "done\n", "a\x00b", "a\x1b[31m", "a\u0085b", "a\u00a0b",
		"a\u200bb", "\u200d", "\ufeffdone", "a\u202eb", "a.\u2060",
	}
	for _, suffix := range refused {
		args, _ := json.Marshal([]any{suffix, 1})
		_, err := call(t, d, hostabi.FuncPublish, string(args))
		requireKind(t, err, fault.Validation)
		assert.ErrorIs(t, err, event.ErrInvalidSubject, "%q", suffix)
		assert.Contains(t, err.Error(), "argument 0: subject suffix", "%q", suffix)
	}
	assert.Len(t, r.envelopes(), len(accepted), "nothing refused was published")

	// A run id with dots or wildcards stays one segment.
	r2 := newRecorder()
	d2 := hostabi.NewDispatcher(hostabi.Config{Host: r2.fullHost(), Node: "n1",
		Run: agent.Run{ID: "r.*>", AgentID: "bot", Capabilities: []string{agent.CapPublish}}})
	_, err := call(t, d2, hostabi.FuncPublish, `["x"]`)
	require.NoError(t, err)
	require.Len(t, r2.envelopes(), 1)
	assert.Equal(t, "agent.run.r___.custom.x", r2.envelopes()[0].Subject)
	assert.Empty(t, r2.envelopes()[0].Payload, "a missing payload publishes none")
}

func TestPublishSubject(t *testing.T) {
	t.Parallel()
	s, err := hostabi.PublishSubject("r1", "done")
	require.NoError(t, err)
	assert.Equal(t, "agent.run.r1.custom.done", s)
	_, err = hostabi.PublishSubject("r1", "a.>")
	assert.ErrorIs(t, err, event.ErrInvalidSubject)
}

func TestPublishHostError(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.publishErr = event.ErrBusClosed
	d := newDispatcher(r.fullHost(), []string{agent.CapPublish, agent.CapEmit}, nil, sandbox.Limits{})
	for _, name := range []string{hostabi.FuncPublish, hostabi.FuncEmit} {
		_, err := call(t, d, name, goodArgs()[name])
		require.ErrorIs(t, err, event.ErrBusClosed)
		assert.Equal(t, fault.KindOf(event.ErrBusClosed), fault.KindOf(err))
	}
	r.publishErr = context.DeadlineExceeded
	_, err := call(t, d, hostabi.FuncPublish, `["x"]`)
	requireKind(t, err, fault.Timeout)
}

// REF 5.4: the host.emit types and their mapping to stream deltas.
func TestEmitMapping(t *testing.T) {
	t.Parallel()
	part := func(p message.Part) event.StreamDeltaPayload {
		return event.StreamDeltaPayload{Type: event.DeltaPart, Part: &p}
	}
	tests := []struct {
		name, args string
		want       event.StreamDeltaPayload
	}{
		{"token", `["token","Hel"]`, part(message.TextPart("Hel"))},
		{"tool_call", `["tool_call",{"id":"c1","name":"search","arguments":"{\"q\":1}"}]`,
			part(message.ToolCallPart("c1", "search", `{"q":1}`))},
		{"tool_call object arguments", `["tool_call",{"id":"c1","name":"search","arguments":{"q": 1}}]`,
			part(message.ToolCallPart("c1", "search", `{"q":1}`))},
		{"tool_call no arguments", `["tool_call",{"id":"c1","name":"search"}]`,
			part(message.ToolCallPart("c1", "search", ""))},
		{"tool_result", `["tool_result",{"tool_call_id":"c1","content":"3 cows","is_error":true}]`,
			part(message.ToolResultPart("c1", "3 cows", true))},
		{"tool_result object content", `["tool_result",{"tool_call_id":"c1","content":{"n":3}}]`,
			part(message.ToolResultPart("c1", `{"n":3}`, false))},
		{"part text", `["part",{"type":"text","text":"x"}]`, part(message.TextPart("x"))},
		{"part data", `["part",{"type":"data","data":[1],"mime_type":"application/json"}]`,
			part(message.DataPart(json.RawMessage(`[1]`), "application/json"))},
		{"part tool_result", `["part",{"type":"tool_result","tool_result":{"tool_call_id":"c","content":"r"}}]`,
			part(message.ToolResultPart("c", "r", false))},
		{"finish", `["finish",{"finish_reason":"stop","request_id":"q1"}]`,
			event.StreamDeltaPayload{Type: event.DeltaFinish, FinishReason: "stop", RequestID: "q1"}},
		{"provider_outputs", `["provider_outputs",[{"provider":"openai","extension":"logprobs","value":[0.1]}]]`,
			event.StreamDeltaPayload{Type: event.DeltaProviderOutputs, ProviderOutputs: []event.ProviderOutput{
				{Provider: "openai", Extension: "logprobs", Value: json.RawMessage(`[0.1]`)}}}},
		{"custom", `["progress",{"pct":50}]`,
			event.StreamDeltaPayload{Type: "progress", Payload: json.RawMessage(`{"pct":50}`)}},
		{"custom string", `["status","thinking"]`,
			event.StreamDeltaPayload{Type: "status", Payload: json.RawMessage(`"thinking"`)}},
		{"custom no payload", `["tick"]`, event.StreamDeltaPayload{Type: "tick"}},
		{"custom null payload", `["tick",null]`, event.StreamDeltaPayload{Type: "tick"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRecorder()
			d := newDispatcher(r.fullHost(), nil, nil, sandbox.Limits{})
			out, err := call(t, d, hostabi.FuncEmit, tt.args)
			require.NoError(t, err)
			assert.Equal(t, `null`, string(out))
			envs := r.envelopes()
			require.Len(t, envs, 1)
			env := envs[0]
			assert.Equal(t, "agent.run.r1.stream.bot_node_n1.delta", env.Subject)
			assert.Equal(t, event.SubjectStreamDelta("r1", event.Actor("bot", "n1")), env.Subject)
			assert.Equal(t, map[string]string{"run_id": "r1", "agent_id": "bot", "node_id": "n1"}, env.Headers)
			var got event.StreamDeltaPayload
			require.NoError(t, env.Decode(&got))
			want, _ := json.Marshal(tt.want)
			gotJSON, _ := json.Marshal(got)
			assert.JSONEq(t, string(want), string(gotJSON))
			require.NoError(t, got.Validate())
			n, b := d.Events()
			assert.Equal(t, 1, n)
			assert.Equal(t, int64(len(env.Payload)), b)
		})
	}
}

// REF 5.4: a payload with the wrong shape for its type is skipped,
// not published empty. The script sees null (emit is fire-and-forget).
func TestEmitSkipsMalformed(t *testing.T) {
	t.Parallel()
	malformed := []string{
		`["token"]`, `["token",null]`, `["token",""]`, `["token",1]`, `["token",["a"]]`,
		`["tool_call",{"name":"f"}]`, `["tool_call",{"id":"c"}]`, `["tool_call","c1"]`,
		`["tool_call",{"id":"c","name":"f","arguments":"{nope"}]`, `["tool_call",{"id":"c","name":"f","extra":1}]`,
		`["tool_result",{"content":"x"}]`, `["tool_result",{"tool_call_id":"c","is_error":"yes"}]`,
		`["part",{"type":"text"}]`, `["part",{"type":"image","url":"u"}]`, `["part",{"type":"data"}]`,
		`["part",{"type":"text","text":"x","tool_call":{"id":"c","name":"f"}}]`, `["part",null]`,
		`["finish",{}]`, `["finish",{"finish_reason":""}]`, `["finish",{"finish_reason":"  "}]`,
		`["finish","stop"]`, `["finish",{"finish_reason":"stop","usage":1}]`,
		`["provider_outputs",[]]`, `["provider_outputs",{}]`, `["provider_outputs",[{"extension":"x"}]]`,
		`["provider_outputs",null]`,
		`["parallel_branch_accept",{"fork_id":"f","branch_id":"b"}]`, `["parallel_branch_cancel"]`,
	}
	r := newRecorder()
	d := newDispatcher(r.fullHost(), nil, nil, sandbox.Limits{})
	for _, args := range malformed {
		out, err := call(t, d, hostabi.FuncEmit, args)
		require.NoError(t, err, args)
		assert.Equal(t, `null`, string(out), args)
	}
	assert.Empty(t, r.envelopes())
	n, _ := d.Events()
	assert.Zero(t, n, "a skipped delta does not count")
}

// REF 5.6.3: a node inside a parallel branch emits speculative
// deltas carrying the fork and branch ids.
func TestEmitSpeculative(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	d := hostabi.NewDispatcher(hostabi.Config{Host: r.fullHost(), Run: testRun(nil), Node: "n1",
		ForkID: "r1#attempt-1#iteration-0#n1", BranchID: "n1"})
	_, err := call(t, d, hostabi.FuncEmit, `["token","x"]`)
	require.NoError(t, err)
	var got event.StreamDeltaPayload
	require.NoError(t, r.envelopes()[0].Decode(&got))
	assert.True(t, got.Speculative)
	assert.Equal(t, "r1#attempt-1#iteration-0#n1", got.ForkID)
	assert.Equal(t, "n1", got.BranchID)
}

func TestEmitSkipIsLogged(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d := hostabi.NewDispatcher(hostabi.Config{Host: newRecorder().fullHost(), Run: testRun(nil), Node: "n1", Logger: logger})
	for range 3 {
		_, err := call(t, d, hostabi.FuncEmit, `["finish",{}]`)
		require.NoError(t, err)
	}
	out := buf.String()
	assert.Equal(t, 1, strings.Count(out, "level=WARN"), out)
	assert.Equal(t, 2, strings.Count(out, "level=DEBUG"), out)
	assert.Contains(t, out, "host emit: delta skipped")
	assert.Contains(t, out, "node=n1")
	assert.Contains(t, out, "type=finish")
}
