package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve"
)

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

// chat posts a chat completion, with a context id when ctxID is not "".
func (ts *testServer) chat(key, ctxID, body string) *http.Response {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.http.URL+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(ts.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if ctxID != "" {
		req.Header.Set(serve.HeaderContextID, ctxID)
	}
	resp, err := ts.http.Client().Do(req)
	require.NoError(ts.t, err)
	return resp
}

func decodeCompletion(t testing.TB, resp *http.Response) completion {
	t.Helper()
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var c completion
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	return c
}

// REF 11.2.1 REF 11.2.3
// Without a context id the request's messages are the history; with one,
// the session keeps it across requests.
func TestChatCompletionHistory(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	c := decodeCompletion(t, ts.chat(acmeKey, "", `{"model":"echo","temperature":0.2,"messages":[
		{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"one"}]},
		{"role":"assistant","content":"1"},{"role":"user","content":"two words"}]}`))
	assert.Equal(t, "chat.completion", c.Object)
	assert.Equal(t, "echo", c.Model)
	assert.True(t, strings.HasPrefix(c.ID, "chatcmpl-run-"))
	require.Len(t, c.Choices, 1)
	assert.Equal(t, "assistant", c.Choices[0].Message.Role)
	assert.Equal(t, "echo: two words (4 messages)", c.Choices[0].Message.Content)
	assert.Equal(t, "stop", *c.Choices[0].FinishReason)
	require.NotNil(t, c.Usage)

	one := `{"model":"echo","messages":[{"role":"user","content":"first"}]}`
	two := `{"model":"echo","messages":[{"role":"user","content":"ignored"},{"role":"user","content":"second"}]}`
	assert.Equal(t, "echo: first (1 messages)", decodeCompletion(t, ts.chat(acmeKey, "c1", one)).Choices[0].Message.Content)
	assert.Equal(t, "echo: second (3 messages)", decodeCompletion(t, ts.chat(acmeKey, "c1", two)).Choices[0].Message.Content,
		"the session's history, not the request's, precedes the last message")
}

// REF 11.2.2
// A streamed completion: a role chunk, a chunk per delta, the finish, the
// usage when asked, then [DONE].
func TestChatCompletionStream(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	resp := ts.chat(acmeKey, "", `{"model":"echo","stream":true,"stream_options":{"include_usage":true},
		"messages":[{"role":"user","content":"a b"}]}`)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var chunks []completion
	var text strings.Builder
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		require.False(t, done, "nothing after [DONE]")
		if line == "[DONE]" {
			done = true
			continue
		}
		var c completion
		require.NoError(t, json.Unmarshal([]byte(line), &c), line)
		assert.Equal(t, "chat.completion.chunk", c.Object)
		chunks = append(chunks, c)
		if len(c.Choices) == 1 && c.Choices[0].Delta.Content != nil {
			text.WriteString(*c.Choices[0].Delta.Content)
		}
	}
	require.True(t, done, "the stream ends with [DONE]")
	require.GreaterOrEqual(t, len(chunks), 4)
	assert.Equal(t, "assistant", chunks[0].Choices[0].Delta.Role)
	assert.Equal(t, "echo: a b", text.String())
	fin := chunks[len(chunks)-2]
	require.Len(t, fin.Choices, 1)
	assert.Equal(t, "stop", *fin.Choices[0].FinishReason)
	last := chunks[len(chunks)-1]
	assert.Empty(t, last.Choices)
	require.NotNil(t, last.Usage, "the usage chunk comes last")
	for _, c := range chunks {
		assert.Equal(t, chunks[0].ID, c.ID, "one id for every chunk")
	}
}

// REF 11.2.4
// Errors come in OpenAI's shape.
func TestChatCompletionErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	for _, tc := range []struct {
		name, ctxID, body string
		status            int
		typ               string
	}{
		{"no model", "", `{"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error"},
		{"no messages", "", `{"model":"echo","messages":[]}`, 400, "invalid_request_error"},
		{"bad role", "", `{"model":"echo","messages":[{"role":"boss","content":"x"}]}`, 400, "invalid_request_error"},
		{"image part", "", `{"model":"echo","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "invalid_request_error"},
		{"assistant last", "", `{"model":"echo","messages":[{"role":"assistant","content":"x"}]}`, 400, "invalid_request_error"},
		{"tool without id", "", `{"model":"echo","messages":[{"role":"tool","content":"x"}]}`, 400, "invalid_request_error"},
		{"not json", "", `{"model":`, 400, "invalid_request_error"},
		{"unknown model", "", `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, 404, "not_found_error"},
	} {
		resp := ts.chat(acmeKey, tc.ctxID, tc.body)
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    string  `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e), tc.name)
		resp.Body.Close()
		assert.Equal(t, tc.status, resp.StatusCode, tc.name)
		assert.Equal(t, tc.typ, e.Error.Type, tc.name)
		assert.NotEmpty(t, e.Error.Message, tc.name)
		assert.NotEmpty(t, e.Error.Code, tc.name)
	}
}

// REF 11.2.1 REF 11.2.2
// An agent that ends its turn with a tool call leaves it to the client
// (finish_reason tool_calls, whole and streamed); the client's tool
// result is the next turn's message.
func TestChatCompletionToolCalls(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	resp := ts.chat(acmeKey, "", `{"model":"caller","messages":[{"role":"user","content":"look it up"}]}`)
	defer resp.Body.Close()
	var c struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name, Arguments string
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	require.Len(t, c.Choices, 1)
	assert.Equal(t, "tool_calls", c.Choices[0].FinishReason)
	assert.Equal(t, "calling", c.Choices[0].Message.Content)
	require.Len(t, c.Choices[0].Message.ToolCalls, 1)
	tc := c.Choices[0].Message.ToolCalls[0]
	assert.Equal(t, "call_1", tc.ID)
	assert.Equal(t, "function", tc.Type)
	assert.Equal(t, "lookup", tc.Function.Name)
	assert.JSONEq(t, `{"q":"x"}`, tc.Function.Arguments)

	stream := ts.chat(acmeKey, "", `{"model":"caller","stream":true,"messages":[{"role":"user","content":"look it up"}]}`)
	defer stream.Body.Close()
	raw, err := io.ReadAll(stream.Body)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"x\"}"}}]}`)
	assert.Contains(t, string(raw), `"finish_reason":"tool_calls"`)

	back := decodeCompletion(t, ts.chat(acmeKey, "", `{"model":"caller","messages":[
		{"role":"user","content":"look it up"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"x\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"42"}]}`))
	assert.Equal(t, "result 42", back.Choices[0].Message.Content)
	assert.Equal(t, "stop", *back.Choices[0].FinishReason)
}

// REF 11.2.10
// A client that goes away before the answer of a completion that is not
// streamed interrupts its turn too: the spinner, which stops only at an
// interrupt, settles.
func TestChatClientGoneInterruptsUnstreamed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.http.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"spinner","messages":[{"role":"user","content":"x"}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+acmeKey)
	done := make(chan error, 1)
	go func() {
		resp, err := ts.http.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return ts.srv.Running() == 1 }, time.Minute, time.Millisecond, "the turn spins")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool { return ts.srv.Running() == 0 }, time.Minute, time.Millisecond,
		"the turn of the client that went away was interrupted")
}

// REF 11.2.11
// A completion's answer, short or long, and an error are sent with their
// Content-Length, not chunked.
func TestChatAnswerContentLength(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	for _, text := range []string{"hi", strings.Repeat("long", 1000)} {
		resp := ts.chat(acmeKey, "", `{"model":"echo","messages":[{"role":"user","content":"`+text+`"}]}`)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		assert.Contains(t, string(body), text)
		assert.Empty(t, resp.TransferEncoding, "%d bytes", len(body))
		assert.EqualValues(t, len(body), resp.ContentLength)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	}
	r := ts.do(http.MethodGet, "/v1/models/nothing", acmeKey, "")
	require.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, strconv.Itoa(len(r.body)), r.header.Get("Content-Length"))
}
