package scripted_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/engine/scripted"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// build returns the provider of a YAML settings document.
func build(t testing.TB, yamlSettings string) *scripted.Provider {
	t.Helper()
	raw, err := resource.YAMLToJSON([]byte(yamlSettings))
	require.NoError(t, err)
	v, err := scripted.Factory().New(context.Background(), resource.Input{Name: "llm", Settings: raw})
	require.NoError(t, err)
	return v.(*scripted.Provider)
}

func user(text string) message.Message { return message.NewTextMessage(message.RoleUser, text) }

func toolResult(id, content string) message.Message {
	return message.Message{Role: message.RoleTool, Parts: []message.Part{message.ToolResultPart(id, content, false)}}
}

const demo = `
replies:
  - match: weather
    on: user
    tool_calls: [{name: get_weather, arguments: {city: "{{input}}"}}]
  - on: tool
    text: "The forecast says: {{input}}"
  - regex: '(?i)^(hi|hello)\b'
    text: Hello! Ask me about the weather.
    chunks: 2
  - text: First ordered reply.
  - text: Second ordered reply.
fallback:
  text: "I can only talk about the weather."
`

func TestRepliesByConditionOrderAndFallback(t *testing.T) {
	t.Parallel()
	p := build(t, demo)
	ctx := context.Background()
	gen := func(msgs ...message.Message) model.Response {
		t.Helper()
		resp, err := p.Generate(ctx, model.Request{Messages: msgs}, nil)
		require.NoError(t, err)
		require.NoError(t, resp.Message.Validate())
		return resp
	}

	r := gen(user("Weather in Lyon?"))
	assert.Equal(t, model.FinishToolCalls, r.FinishReason)
	assert.Equal(t, []message.ToolCall{{ID: "call_0_0", Name: "get_weather", Arguments: `{"city":"Weather in Lyon?"}`}},
		r.Message.ToolCalls())

	r = gen(user("Weather in Lyon?"), r.Message, toolResult("call_0_0", "sunny, 21°C"))
	assert.Equal(t, "The forecast says: sunny, 21°C", r.Message.Text())
	assert.Equal(t, model.FinishStop, r.FinishReason)

	assert.Equal(t, "Hello! Ask me about the weather.", gen(user("hello there")).Message.Text())
	assert.Equal(t, "First ordered reply.", gen(user("what?")).Message.Text())
	asst := message.NewTextMessage(message.RoleAssistant, "x")
	assert.Equal(t, "Second ordered reply.", gen(user("a"), asst, user("b")).Message.Text())
	assert.Equal(t, "I can only talk about the weather.", gen(user("a"), asst, user("b"), asst, user("c")).Message.Text())
}

func TestLoopAndExhaustion(t *testing.T) {
	t.Parallel()
	asst := message.NewTextMessage(message.RoleAssistant, "x")
	three := []message.Message{user("a"), asst, user("b"), asst, user("c")}

	looped := build(t, "loop: true\nreplies: [{text: one}, {text: two}]")
	r, err := looped.Generate(context.Background(), model.Request{Messages: three}, nil)
	require.NoError(t, err)
	assert.Equal(t, "one", r.Message.Text())

	once := build(t, "replies: [{text: one}, {text: two}]")
	_, err = once.Generate(context.Background(), model.Request{Messages: three}, nil)
	require.ErrorIs(t, err, fault.NotAvailable)
	assert.Contains(t, err.Error(), "no reply for turn 2")
}

func TestStreamingChunksAndToolCalls(t *testing.T) {
	t.Parallel()
	p := build(t, `
replies:
  - match: words
    text: "one two  three"
  - match: chunks
    text: "abcdefg"
    chunks: 3
  - match: calls
    text: "Checking."
    chunks: 1
    tool_calls:
      - {id: c1, name: a}
      - {name: b, arguments: '{"q": "{{input}}"}'}
`)
	tests := []struct {
		in   string
		want []model.Delta
	}{
		{"words", []model.Delta{{Text: "one "}, {Text: "two  "}, {Text: "three"}}},
		{"chunks", []model.Delta{{Text: "abc"}, {Text: "def"}, {Text: "g"}}},
		{`calls "quoted"`, []model.Delta{{Text: "Checking."},
			{ToolCall: &message.ToolCall{ID: "c1", Name: "a", Arguments: "{}"}},
			{ToolCall: &message.ToolCall{ID: "call_0_1", Name: "b", Arguments: `{"q":"calls \"quoted\""}`}}}},
	}
	for _, tt := range tests {
		var got []model.Delta
		resp, err := p.Generate(context.Background(), model.Request{Messages: []message.Message{user(tt.in)}},
			func(d model.Delta) error {
				got = append(got, d)
				return nil
			})
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, tt.in)
		require.NoError(t, resp.Message.Validate())
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	p := build(t, "replies: [{match: fixed, text: ok, usage: {input: 10, output: 3}}, {text: three words here}]")
	r, err := p.Generate(context.Background(), model.Request{Messages: []message.Message{user("fixed")}}, nil)
	require.NoError(t, err)
	assert.Equal(t, agent.Usage{InputTokens: 10, OutputTokens: 3, TotalTokens: 13}, r.Usage)
	r, err = p.Generate(context.Background(), model.Request{System: "be brief", Messages: []message.Message{user("a b")}}, nil)
	require.NoError(t, err)
	assert.Equal(t, agent.Usage{InputTokens: 4, OutputTokens: 3, TotalTokens: 7}, r.Usage)
}

func TestErrorReplyFailsAfterTheText(t *testing.T) {
	t.Parallel()
	p := build(t, "replies: [{text: 'partial answer', error: {kind: rate_limit, message: slow down}}]")
	var got []model.Delta
	resp, err := p.Generate(context.Background(), model.Request{Messages: []message.Message{user("x")}}, func(d model.Delta) error {
		got = append(got, d)
		return nil
	})
	require.ErrorIs(t, err, fault.RateLimit)
	assert.Contains(t, err.Error(), "slow down")
	assert.Len(t, got, 2)
	assert.Equal(t, "partial answer", resp.Message.Text())
}

func TestCancelledWhileStreaming(t *testing.T) {
	t.Parallel()
	p := build(t, "replies: [{text: 'a b c d'}]")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := p.Generate(ctx, model.Request{Messages: []message.Message{user("x")}}, func(model.Delta) error {
		cancel()
		return nil
	})
	require.ErrorIs(t, err, fault.Aborted)
	assert.Equal(t, "a ", resp.Message.Text())
}

func TestGenerateRejects(t *testing.T) {
	t.Parallel()
	p := build(t, "replies: [{text: x}]")
	_, err := p.Generate(context.Background(), model.Request{}, nil)
	require.ErrorIs(t, err, fault.Validation)
	//nolint:staticcheck // a nil ctx is refused
	_, err = p.Generate(nil, model.Request{Messages: []message.Message{user("x")}}, nil)
	require.ErrorIs(t, err, fault.Validation)
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"unknown key", `{"replies":[{"text":"x","delay":"1s"}]}`, `unknown field "delay"`},
		{"empty", `{}`, "settings.replies: at least one reply or a fallback"},
		{"empty reply", `{"replies":[{"match":"x"}]}`, "settings.replies[0]: a reply needs text"},
		{"bad regex", `{"replies":[{"text":"x","regex":"("}]}`, "settings.replies[0].regex"},
		{"bad on", `{"replies":[{"text":"x","on":"system"}]}`, "settings.replies[0].on"},
		{"negative chunks", `{"replies":[{"text":"x","chunks":-1}]}`, "settings.replies[0].chunks"},
		{"call without name", `{"replies":[{"tool_calls":[{"id":"a"}]}]}`, "settings.replies[0].tool_calls[0].name"},
		{"duplicate id", `{"replies":[{"tool_calls":[{"id":"a","name":"f"},{"id":"a","name":"g"}]}]}`, "tool_calls[1].id"},
		{"array arguments", `{"replies":[{"tool_calls":[{"name":"f","arguments":[1]}]}]}`, "tool_calls[0].arguments"},
		{"string not JSON", `{"replies":[{"tool_calls":[{"name":"f","arguments":"{nope"}]}]}`, "tool_calls[0].arguments"},
		{"tool_calls finish without calls", `{"replies":[{"text":"x","finish":"tool_calls"}]}`, "finish: tool_calls needs"},
		{"stop with calls", `{"replies":[{"finish":"stop","tool_calls":[{"name":"f"}]}]}`, "finishes with tool_calls"},
		{"unknown finish", `{"replies":[{"text":"x","finish":"done"}]}`, `"done" is not stop`},
		{"negative usage", `{"replies":[{"text":"x","usage":{"input":-1,"output":0}}]}`, "usage: counts"},
		{"unknown error kind", `{"replies":[{"error":{"kind":"oops"}}]}`, "error.kind"},
		{"conditional fallback", `{"fallback":{"text":"x","match":"y"}}`, "settings.fallback: a fallback takes no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := scripted.Parse(json.RawMessage(tt.in))
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tt.want)
			_, err = scripted.Factory().New(context.Background(), resource.Input{Name: "llm", Settings: json.RawMessage(tt.in)})
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), `build provider "llm"`)
		})
	}
}

func TestFactorySpec(t *testing.T) {
	t.Parallel()
	spec := scripted.Factory().Spec()
	assert.Equal(t, model.Kind, spec.Kind)
	assert.Equal(t, "scripted", spec.Impl)
}

// REF 8.2: a provider without profiles refuses a request naming one,
// and tells so before any call.
func TestProfilesAreRefused(t *testing.T) {
	t.Parallel()
	p := build(t, "replies: [{text: x}]")
	tests := []struct {
		profile string
		ok      bool
	}{{"", true}, {"eu", false}}
	for _, tt := range tests {
		err := p.CheckProfile(tt.profile)
		_, genErr := p.Generate(context.Background(), model.Request{Messages: []message.Message{user("x")}, Profile: tt.profile}, nil)
		if tt.ok {
			require.NoError(t, err)
			require.NoError(t, genErr)
			continue
		}
		require.ErrorIs(t, err, fault.Validation)
		assert.Contains(t, err.Error(), `profile "eu"`)
		require.ErrorIs(t, genErr, fault.Validation)
	}
}

// REF 5.3.1: the scripted provider produces text: it refuses another
// modality, before any call and at the call.
func TestIntentsOtherThanTextAreRefused(t *testing.T) {
	t.Parallel()
	p := build(t, "replies: [{text: x}]")
	tests := []struct {
		intent model.Intent
		want   string // "" when served
	}{
		{model.Intent{}, ""}, {model.TextOnly, ""},
		{model.Intent{Text: true, Image: true}, "intent image"},
		{model.Intent{Audio: true}, "intent audio"},
		{model.Intent{Video: true}, "intent video"},
	}
	for _, tt := range tests {
		err := p.CheckIntent(tt.intent)
		_, genErr := p.Generate(context.Background(), model.Request{Messages: []message.Message{user("x")}, Intent: tt.intent}, nil)
		if tt.want == "" {
			require.NoError(t, err)
			require.NoError(t, genErr)
			continue
		}
		require.ErrorIs(t, err, fault.Validation)
		assert.Contains(t, err.Error(), tt.want)
		require.ErrorIs(t, genErr, fault.Validation)
	}
}
