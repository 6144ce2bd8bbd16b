package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func userRequest(text string) model.Request {
	return model.Request{Messages: []message.Message{message.NewTextMessage(message.RoleUser, text)}}
}

var weatherTools = []tool.Definition{
	{Name: "get_weather", Description: "The weather in a city.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "get_time"},
}

// collect returns an onDelta that records the deltas.
func collect(out *[]model.Delta) func(model.Delta) error {
	return func(d model.Delta) error {
		*out = append(*out, d)
		return nil
	}
}

// REF 8.9
func TestGenerateUnaryText(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 200, "chat_text.json"))
	p := newProvider(t, w.URL, func(s *Settings) {
		s.Organization, s.Project = "org-1", "proj-1"
		s.Headers = map[string]string{"X-Gateway-Route": "blue"}
	})
	req := userRequest("Hi")
	req.System = "You are terse."
	resp, err := p.Generate(context.Background(), req, nil)
	require.NoError(t, err)
	assert.Equal(t, message.NewTextMessage(message.RoleAssistant, "Hello! How can I help you today?"), resp.Message)
	assert.Equal(t, model.FinishStop, resp.FinishReason)
	assert.Equal(t, agent.Usage{InputTokens: 19, OutputTokens: 9, TotalTokens: 28}, resp.Usage)

	got := w.seen()
	require.Len(t, got, 1)
	assert.Equal(t, "/v1/chat/completions", got[0].Path)
	assert.Equal(t, "Bearer sk-test", got[0].Header.Get("Authorization"))
	assert.Equal(t, "org-1", got[0].Header.Get("OpenAI-Organization"))
	assert.Equal(t, "proj-1", got[0].Header.Get("OpenAI-Project"))
	assert.Equal(t, "blue", got[0].Header.Get("X-Gateway-Route"))
	assert.Equal(t, "gpt-4o-mini", got[0].Body["model"])
	assert.NotEqual(t, true, got[0].Body["stream"])
	assert.Equal(t, []any{
		map[string]any{"role": "system", "content": "You are terse."},
		map[string]any{"role": "user", "content": "Hi"},
	}, got[0].Body["messages"])
}

// REF 8.7
func TestGenerateUnaryToolCalls(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 200, "chat_tools.json"))
	p := newProvider(t, w.URL)
	req := model.Request{Model: "gpt-4.1", Tools: weatherTools, ToolChoice: "get_weather", Messages: []message.Message{
		message.NewTextMessage(message.RoleUser, "Weather and time in Lyon?"),
		{Role: message.RoleAssistant, Parts: []message.Part{message.ToolCallPart("call_0", "get_weather", `{"city":"Paris"}`)}},
		{Role: message.RoleTool, Parts: []message.Part{message.ToolResultPart("call_0", "sunny", false),
			message.ToolResultPart("call_x", "no such city", true)}},
		message.NewTextMessage(message.RoleUser, "And Lyon?"),
	}}
	resp, err := p.Generate(context.Background(), req, nil)
	require.NoError(t, err)
	assert.Equal(t, model.FinishToolCalls, resp.FinishReason)
	assert.Equal(t, []message.ToolCall{
		{ID: "call_Wx1", Name: "get_weather", Arguments: `{"city":"Lyon"}`},
		{ID: "call_Wx2", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
	}, resp.Message.ToolCalls())
	require.NoError(t, resp.Message.Validate())

	body := w.seen()[0].Body
	assert.Equal(t, "gpt-4.1", body["model"])
	assert.Equal(t, map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, body["tool_choice"])
	tools := body["tools"].([]any)
	require.Len(t, tools, 2)
	assert.Equal(t, map[string]any{"type": "function", "function": map[string]any{
		"name": "get_weather", "description": "The weather in a city.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required": []any{"city"}}}}, tools[0])
	assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{}},
		tools[1].(map[string]any)["function"].(map[string]any)["parameters"])
	msgs := body["messages"].([]any)
	require.Len(t, msgs, 5, "one wire message per tool result")
	assert.Equal(t, map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "call_0", "type": "function",
		"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}}, msgs[1])
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_0", "content": "sunny"}, msgs[2])
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_x", "content": "error: no such city"}, msgs[3])
}

// REF 8.6
func TestGenerateStreamText(t *testing.T) {
	t.Parallel()
	w := newWire(t, replySSE(t, "stream_text.sse"))
	p := newProvider(t, w.URL)
	var deltas []model.Delta
	resp, err := p.Generate(context.Background(), userRequest("Hi"), collect(&deltas))
	require.NoError(t, err)
	assert.Equal(t, []model.Delta{{Text: "Hel"}, {Text: "lo, "}, {Text: "world!"}}, deltas)
	assert.Equal(t, "Hello, world!", resp.Message.Text())
	assert.Equal(t, model.FinishStop, resp.FinishReason)
	assert.Equal(t, agent.Usage{InputTokens: 12, OutputTokens: 4, TotalTokens: 16}, resp.Usage, "usage comes in the last chunk")

	body := w.seen()[0].Body
	assert.Equal(t, true, body["stream"])
	assert.Equal(t, map[string]any{"include_usage": true}, body["stream_options"])
}

// REF 8.7
func TestGenerateStreamToolCallsSplitAcrossChunks(t *testing.T) {
	t.Parallel()
	w := newWire(t, replySSE(t, "stream_tools.sse"))
	p := newProvider(t, w.URL)
	var deltas []model.Delta
	req := userRequest("Weather and time in Lyon?")
	req.Tools = weatherTools
	req.ToolChoice = model.ToolChoiceRequired
	resp, err := p.Generate(context.Background(), req, collect(&deltas))
	require.NoError(t, err)
	want := []message.ToolCall{
		{ID: "call_Wx1", Name: "get_weather", Arguments: `{"city":"Lyon"}`},
		{ID: "call_Wx2", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
	}
	require.Len(t, deltas, 2)
	assert.Equal(t, want[0], *deltas[0].ToolCall)
	assert.Equal(t, want[1], *deltas[1].ToolCall)
	assert.Equal(t, want, resp.Message.ToolCalls())
	assert.Equal(t, model.FinishToolCalls, resp.FinishReason)
	assert.Equal(t, agent.Usage{InputTokens: 82, OutputTokens: 47, TotalTokens: 129}, resp.Usage)
	assert.Equal(t, "required", w.seen()[0].Body["tool_choice"])
}

// A local server's stream (keep-alive comments, no usage chunk, auth
// scheme none): REF 8.9.
func TestGenerateStreamLocalServer(t *testing.T) {
	t.Parallel()
	w := newWire(t, replySSE(t, "stream_ollama.sse"))
	p := newProvider(t, w.URL, func(s *Settings) {
		s.APIKey, s.Auth = "", AuthSettings{Scheme: AuthNone}
		s.Model = "llama3.2"
	})
	var deltas []model.Delta
	resp, err := p.Generate(context.Background(), userRequest("Hi"), collect(&deltas))
	require.NoError(t, err)
	assert.Equal(t, "Hi there", resp.Message.Text())
	assert.Equal(t, agent.Usage{}, resp.Usage)
	assert.Empty(t, w.seen()[0].Header.Values("Authorization"))
}

// REF 8.8
func TestGenerateHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 429, "error_429.json", "Retry-After", "1"), replyJSON(t, 200, "chat_text.json"))
	p := newProvider(t, w.URL, retries(2), func(s *Settings) { s.RetryBackoff = "1h" })
	start := time.Now()
	resp, err := p.Generate(context.Background(), userRequest("Hi"), nil)
	require.NoError(t, err)
	assert.Equal(t, "Hello! How can I help you today?", resp.Message.Text())
	assert.Len(t, w.seen(), 2)
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "the retry waited for Retry-After, not the 1h backoff")
}

func TestGenerateRetryAfterBeyondMaxWaitFailsAtOnce(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 429, "error_429.json", "Retry-After", "3600"))
	p := newProvider(t, w.URL, retries(3), func(s *Settings) { s.MaxRetryWait = "1s" })
	_, err := p.Generate(context.Background(), userRequest("Hi"), nil)
	require.ErrorIs(t, err, fault.RateLimit)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, time.Hour, se.RetryAfter)
	assert.Equal(t, 1, se.Attempts)
	assert.Contains(t, err.Error(), "Rate limit reached")
	assert.Len(t, w.seen(), 1)
}

// REF 8.8
func TestGenerateRetries5xxThenSucceeds(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			t.Parallel()
			ok := replyJSON(t, 200, "chat_text.json")
			if stream {
				ok = replySSE(t, "stream_text.sse")
			}
			w := newWire(t, replyJSON(t, 500, "error_500.json"), ok)
			p := newProvider(t, w.URL, retries(2))
			var onDelta func(model.Delta) error
			var deltas []model.Delta
			if stream {
				onDelta = collect(&deltas)
			}
			resp, err := p.Generate(context.Background(), userRequest("Hi"), onDelta)
			require.NoError(t, err)
			assert.NotEmpty(t, resp.Message.Text())
			assert.Len(t, w.seen(), 2)
		})
	}
}

func TestGenerateRetriesAreBounded(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 503, "error_500.json"))
	p := newProvider(t, w.URL, retries(2))
	_, err := p.Generate(context.Background(), userRequest("Hi"), nil)
	require.ErrorIs(t, err, fault.NotAvailable)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 3, se.Attempts)
	assert.Len(t, w.seen(), 3)
	assert.Contains(t, err.Error(), `openai generate: model "gpt-4o-mini": status 503`)
}

// REF 8.8
func TestErrorKindPerStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		kind   *fault.Kind
	}{
		{400, fault.Validation}, {401, fault.Forbidden}, {403, fault.Forbidden}, {404, fault.NotFound},
		{408, fault.Timeout}, {409, fault.Conflict}, {422, fault.Validation}, {429, fault.RateLimit},
		{500, fault.NotAvailable}, {502, fault.NotAvailable}, {503, fault.NotAvailable}, {504, fault.Timeout},
		{418, fault.NotAvailable},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			t.Parallel()
			assert.Same(t, tt.kind, KindOfStatus(tt.status))
			for _, stream := range []bool{false, true} {
				w := newWire(t, replyJSON(t, tt.status, "error_401.json"))
				p := newProvider(t, w.URL)
				var onDelta func(model.Delta) error
				if stream {
					onDelta = func(model.Delta) error { return nil }
				}
				_, err := p.Generate(context.Background(), userRequest("Hi"), onDelta)
				require.ErrorIs(t, err, tt.kind, "stream=%v", stream)
				assert.Equal(t, tt.kind, fault.KindOf(err))
				var se *StatusError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, tt.status, se.Status)
				assert.Contains(t, se.Message, "Incorrect API key provided")
			}
		})
	}
}

// REF 8.6
func TestGenerateStreamCutMidLine(t *testing.T) {
	t.Parallel()
	w := newWire(t, replySSE(t, "stream_cut.sse"))
	p := newProvider(t, w.URL, retries(2))
	var deltas []model.Delta
	resp, err := p.Generate(context.Background(), userRequest("Hi"), collect(&deltas))
	require.ErrorIs(t, err, fault.Internal)
	assert.Contains(t, err.Error(), `stream cut mid-line: "data: {\"id\":\"chatcmpl-9xD1\"`)
	assert.Equal(t, "Partial", resp.Message.Text(), "the text that arrived is returned")
	assert.Len(t, deltas, 2)
	assert.Len(t, w.seen(), 1, "a stream that delivered deltas is not retried")
}

func TestGenerateStreamMalformedChunk(t *testing.T) {
	t.Parallel()
	w := newWire(t, replySSE(t, "stream_malformed.sse"))
	p := newProvider(t, w.URL)
	resp, err := p.Generate(context.Background(), userRequest("Hi"), func(model.Delta) error { return nil })
	require.ErrorIs(t, err, fault.Internal)
	assert.Contains(t, err.Error(), `malformed stream chunk "{\"id\":\"chatcmpl-9xE1\"`)
	assert.Contains(t, err.Error(), `so far`)
	assert.Equal(t, "Fine", resp.Message.Text())
}

func TestGenerateStreamWithoutEnd(t *testing.T) {
	t.Parallel()
	lines := strings.SplitAfter(string(fixture(t, "stream_text.sse")), "\n\n")
	body := strings.Join(lines[:3], "") // role, "Hel", "lo, ": no finish, no [DONE]
	w := newWire(t, func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		_, _ = rw.Write([]byte(body))
	})
	p := newProvider(t, w.URL)
	resp, err := p.Generate(context.Background(), userRequest("Hi"), func(model.Delta) error { return nil })
	require.ErrorIs(t, err, fault.Internal)
	assert.Contains(t, err.Error(), "without a finish or [DONE]")
	assert.Equal(t, "Hello, ", resp.Message.Text())
}

// slowStream sends one chunk and then holds the stream open until the
// client goes away.
func slowStream(t testing.TB) http.HandlerFunc {
	first := strings.SplitAfter(string(fixture(t, "stream_text.sse")), "\n\n")[1]
	return func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		_, _ = rw.Write([]byte(first))
		rw.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

func TestGenerateSlowStreamCancelledByCtx(t *testing.T) {
	t.Parallel()
	w := newWire(t, slowStream(t))
	p := newProvider(t, w.URL, retries(3))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := p.Generate(ctx, userRequest("Hi"), func(d model.Delta) error {
		cancel() // the first delta arrived; the rest never will
		return nil
	})
	require.ErrorIs(t, err, fault.Aborted)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "Hel", resp.Message.Text())
	assert.Len(t, w.seen(), 1)
}

func TestGenerateTimeoutSetting(t *testing.T) {
	t.Parallel()
	w := newWire(t, slowStream(t))
	p := newProvider(t, w.URL, func(s *Settings) { s.Timeout = "100ms" })
	_, err := p.Generate(context.Background(), userRequest("Hi"), func(model.Delta) error { return nil })
	require.ErrorIs(t, err, fault.Timeout)
	assert.Contains(t, err.Error(), "settings.timeout of 100ms exceeded")
}

func TestGenerateOnDeltaErrorEndsTheCall(t *testing.T) {
	t.Parallel()
	w := newWire(t, replySSE(t, "stream_text.sse"))
	p := newProvider(t, w.URL, retries(2))
	stop := fault.New(fault.BudgetExceeded, "sink", "enough")
	n := 0
	_, err := p.Generate(context.Background(), userRequest("Hi"), func(model.Delta) error {
		n++
		return stop
	})
	require.ErrorIs(t, err, stop)
	assert.Equal(t, 1, n)
	assert.Len(t, w.seen(), 1)
}

func TestGenerateUnreachableServer(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 200, "chat_text.json"))
	url := w.URL
	w.Close()
	p := newProvider(t, url, retries(1))
	_, err := p.Generate(context.Background(), userRequest("Hi"), nil)
	require.ErrorIs(t, err, fault.NotAvailable)
}

// REF 8.9
// REF 8.4
func TestAuthSchemes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mod    func(*Settings)
		header string
		want   string
	}{
		{"bearer", func(*Settings) {}, "Authorization", "Bearer sk-test"},
		{"header", func(s *Settings) { s.Auth = AuthSettings{Scheme: AuthHeader, Header: "X-Api-Key"} }, "X-Api-Key", "sk-test"},
		{"none", func(s *Settings) { s.APIKey, s.Auth = "", AuthSettings{Scheme: AuthNone} }, "Authorization", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWire(t, replyJSON(t, 200, "chat_text.json"))
			_, err := newProvider(t, w.URL, tt.mod).Generate(context.Background(), userRequest("Hi"), nil)
			require.NoError(t, err)
			h := w.seen()[0].Header
			assert.Equal(t, tt.want, h.Get(tt.header))
			if tt.name != "bearer" {
				assert.Empty(t, h.Get("Authorization"))
			}
		})
	}
}

// REF 8.5
func TestAzureDeployment(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 200, "chat_text.json"))
	p := newProvider(t, w.URL, func(s *Settings) {
		s.BaseURL, s.Azure, s.Model = w.URL, &AzureSettings{}, "my-gpt4o"
	})
	_, err := p.Generate(context.Background(), userRequest("Hi"), nil)
	require.NoError(t, err)
	got := w.seen()[0]
	assert.Equal(t, "/openai/deployments/my-gpt4o/chat/completions", got.Path)
	assert.Equal(t, "api-version="+DefaultAzureAPIVersion, got.Query)
	assert.Equal(t, "sk-test", got.Header.Get("api-key"))
	assert.Empty(t, got.Header.Get("Authorization"))
}

func TestGenerateRejectsBadRequests(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 200, "chat_text.json"))
	p := newProvider(t, w.URL, func(s *Settings) { s.Model = "" })
	tests := []struct {
		name string
		req  model.Request
		want string
	}{
		{"no model", userRequest("Hi"), "no model"},
		{"no messages", model.Request{Model: "m"}, "no messages"},
		{"invalid message", model.Request{Model: "m", Messages: []message.Message{{Role: "robot"}}}, "messages[0]"},
		{"unknown tool choice", model.Request{Model: "m", Messages: userRequest("x").Messages, ToolChoice: "nope"}, `tool_choice "nope"`},
		{"tool without name", model.Request{Model: "m", Messages: userRequest("x").Messages, Tools: []tool.Definition{{}}}, "tools[0]: name"},
		{"bad schema", model.Request{Model: "m", Messages: userRequest("x").Messages,
			Tools: []tool.Definition{{Name: "t", Parameters: json.RawMessage(`[1]`)}}}, "object schema"},
	}
	for _, tt := range tests {
		_, err := p.Generate(context.Background(), tt.req, nil)
		require.ErrorIs(t, err, fault.Validation, tt.name)
		assert.Contains(t, err.Error(), tt.want, tt.name)
	}
	assert.Empty(t, w.seen())
	//nolint:staticcheck // a nil ctx is refused, not a panic
	_, err := p.Generate(nil, userRequest("x"), nil)
	assert.ErrorIs(t, err, fault.Validation)
}

func TestCloseIsIdempotent(t *testing.T) {
	t.Parallel()
	p, err := New(Settings{APIKey: "k"})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
}

func TestStatusErrorText(t *testing.T) {
	t.Parallel()
	e := &StatusError{Status: 429, Message: "slow down", RetryAfter: 2 * time.Second, Attempts: 3, kind: fault.RateLimit}
	assert.Equal(t, "status 429: slow down (retry after 2s) after 3 attempts", e.Error())
	assert.True(t, errors.Is(e, fault.RateLimit))
}

func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	tests := map[string]time.Duration{
		"": 0, "2": 2 * time.Second, "0": 0, "-1": 0, "soon": 0, "99999999": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	}
	for v, want := range tests {
		h := http.Header{}
		h.Set("Retry-After", v)
		assert.Equal(t, want, retryAfter(h, now), "Retry-After %q", v)
	}
}

// A server that reports an error inside the stream, after text arrived:
// the text is returned, the error is NotAvailable with the server's
// message, and nothing is retried.
func TestGenerateStreamErrorEvent(t *testing.T) {
	t.Parallel()
	first := strings.SplitAfter(string(fixture(t, "stream_text.sse")), "\n\n")[1]
	w := newWire(t, func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		_, _ = rw.Write([]byte(first + `data: {"error": {"message": "upstream overloaded", "type": "server_error"}}` + "\n\n"))
	})
	p := newProvider(t, w.URL, retries(2))
	resp, err := p.Generate(context.Background(), userRequest("Hi"), func(model.Delta) error { return nil })
	require.ErrorIs(t, err, fault.NotAvailable)
	assert.Contains(t, err.Error(), "upstream overloaded")
	assert.Equal(t, "Hel", resp.Message.Text())
	assert.Len(t, w.seen(), 1)
}

func TestIncludeUsageCanBeTurnedOff(t *testing.T) {
	t.Parallel()
	w := newWire(t, replySSE(t, "stream_ollama.sse"))
	off := false
	p := newProvider(t, w.URL, func(s *Settings) { s.IncludeUsage = &off })
	_, err := p.Generate(context.Background(), userRequest("Hi"), func(model.Delta) error { return nil })
	require.NoError(t, err)
	assert.NotContains(t, w.seen()[0].Body, "stream_options")
}
