package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openaiChat is the example deployment the local-server tests run.
const openaiChat = "../../examples/openai-chat/deploy.yaml"

// wireRequest is the part of a Chat Completions request the fake server
// looks at.
type wireRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// chatServer is an OpenAI-wire server that replays a streamed exchange:
// a tool call to the first request, text after the tool result.
type chatServer struct {
	args     []string // the pieces of the call's arguments; nil: 12.5 * 8
	mu       sync.Mutex
	requests []wireRequest
	auth     []string
}

func (s *chatServer) seen() ([]wireRequest, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]wireRequest(nil), s.requests...), append([]string(nil), s.auth...)
}

// chunk is one streamed chunk of the exchange; choice is the JSON of its
// only choice, or empty for the usage chunk.
func chunk(id, choice, usage string) string {
	choices := "[]"
	if choice != "" {
		choices = "[" + choice + "]"
	}
	return fmt.Sprintf(`data: {"id":%q,"object":"chat.completion.chunk","created":1764460820,`+
		`"model":"gpt-4o-mini-2024-07-18","choices":%s,"usage":%s}`+"\n\n", id, choices, usage)
}

// toolCallStream asks for calculate with the arguments in pieces, split
// across chunks as servers send them.
func toolCallStream(pieces ...string) string {
	out := []string{chunk("chatcmpl-1", `{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,`+
		`"id":"call_Q7x","type":"function","function":{"name":"calculate","arguments":""}}]},"finish_reason":null}`, "null")}
	for _, p := range pieces {
		arg, _ := json.Marshal(p)
		out = append(out, chunk("chatcmpl-1",
			`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`+string(arg)+`}}]},"finish_reason":null}`, "null"))
	}
	out = append(out,
		chunk("chatcmpl-1", `{"index":0,"delta":{},"finish_reason":"tool_calls"}`, "null"),
		chunk("chatcmpl-1", "", `{"prompt_tokens":96,"completion_tokens":21,"total_tokens":117}`),
		"data: [DONE]\n\n")
	return strings.Join(out, "")
}

// textStream answers from the tool result, the usage in the last chunk.
var textStream = strings.Join([]string{
	chunk("chatcmpl-2", `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}`, "null"),
	chunk("chatcmpl-2", `{"index":0,"delta":{"content":"12.5 times 8"},"finish_reason":null}`, "null"),
	chunk("chatcmpl-2", `{"index":0,"delta":{"content":" is "},"finish_reason":null}`, "null"),
	chunk("chatcmpl-2", `{"index":0,"delta":{"content":"100."},"finish_reason":null}`, "null"),
	chunk("chatcmpl-2", `{"index":0,"delta":{},"finish_reason":"stop"}`, "null"),
	chunk("chatcmpl-2", "", `{"prompt_tokens":131,"completion_tokens":9,"total_tokens":140}`),
	"data: [DONE]\n\n",
}, "")

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req wireRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	if req.Messages[len(req.Messages)-1].Role == "tool" {
		_, _ = io.WriteString(w, textStream)
		return
	}
	args := s.args
	if args == nil {
		args = []string{`{"a":12`, `.5,"op":"*",`, `"b":8}`}
	}
	_, _ = io.WriteString(w, toolCallStream(args...))
}

// chatEnv is the environment of a corral process pointed at url.
func chatEnv(url string) []string {
	return append(os.Environ(), "OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-local-test", "OPENAI_MODEL=gpt-4o-mini")
}

// runWithEnv runs the binary to the end with stdin closed and env as its
// environment.
func runWithEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(corralBinary(t), args...)
	cmd.Env = env
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &errOut, strings.NewReader("")
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		require.NoError(t, err)
	}
	return out.String(), errOut.String(), code
}

// The OpenAI-compatible example streams the model's tool call, the tool's
// result and the model's answer from a local server, and completes.
func TestCLIOpenAIChatStreams(t *testing.T) {
	t.Parallel()
	srv := &chatServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	stdout, stderr, code := runWithEnv(t, chatEnv(ts.URL), "run", openaiChat, "--message", "What is 12.5 times 8?")
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "[tool call calculate {\"a\":12.5,\"op\":\"*\",\"b\":8}]\n[tool result 100]\n12.5 times 8 is 100.\n", stdout)
	assert.Regexp(t, `-- completed \(run-[0-9a-f]{16}; tokens: 227 prompt \+ 30 completion = 257\)\n$`, stderr,
		"the usage of both model calls, summed")

	reqs, auth := srv.seen()
	require.Len(t, reqs, 2, "one request for the tool call, one after its result")
	assert.Equal(t, []string{"Bearer sk-local-test", "Bearer sk-local-test"}, auth)
	first := reqs[0]
	assert.Equal(t, "gpt-4o-mini", first.Model)
	assert.True(t, first.Stream)
	require.Len(t, first.Tools, 1)
	assert.Equal(t, "calculate", first.Tools[0].Function.Name)
	require.Len(t, first.Messages, 2)
	assert.Equal(t, "system", first.Messages[0].Role)
	assert.Equal(t, "What is 12.5 times 8?", first.Messages[1].Content)
}

// The second request carries the model's call, and the tool's result
// under the model's call id.
func TestCLIOpenAIChatSendsTheToolResult(t *testing.T) {
	t.Parallel()
	srv := &chatServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	_, stderr, code := runWithEnv(t, chatEnv(ts.URL), "run", openaiChat, "--message", "What is 12.5 times 8?")
	require.Equal(t, exitOK, code, stderr)
	reqs, _ := srv.seen()
	require.Len(t, reqs, 2)
	msgs := reqs[1].Messages
	require.Len(t, msgs, 4, "system, user, the assistant's call, the tool's result")
	assert.Equal(t, "assistant", msgs[2].Role)
	require.Len(t, msgs[2].ToolCalls, 1)
	assert.Equal(t, "call_Q7x", msgs[2].ToolCalls[0].ID)
	assert.Equal(t, "calculate", msgs[2].ToolCalls[0].Function.Name)
	assert.JSONEq(t, `{"a":12.5,"op":"*","b":8}`, msgs[2].ToolCalls[0].Function.Arguments)
	assert.Equal(t, "tool", msgs[3].Role)
	assert.Equal(t, "call_Q7x", msgs[3].ToolCallID)
	assert.Equal(t, "100", msgs[3].Content)
}

// A tool that fails is an error result the model reads, not a failed
// turn.
func TestCLIOpenAIChatToolError(t *testing.T) {
	t.Parallel()
	srv := &chatServer{args: []string{`{"a":1,"op":"/","b":0}`}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	stdout, stderr, code := runWithEnv(t, chatEnv(ts.URL), "run", openaiChat, "--message", "What is 1 / 0?")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, `[tool result tool "calculate" failed: validation: division by zero]`)
	reqs, _ := srv.seen()
	require.Len(t, reqs, 2)
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	assert.Equal(t, "call_Q7x", last.ToolCallID)
	assert.Equal(t, `error: tool "calculate" failed: validation: division by zero`, last.Content)
}

func TestCLIOpenAIChatJSON(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(&chatServer{})
	defer ts.Close()
	stdout, stderr, code := runWithEnv(t, chatEnv(ts.URL), "run", openaiChat, "--message", "What is 12.5 times 8?", "--json")
	assert.Equal(t, exitOK, code, stderr)
	var got jsonResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	assert.Equal(t, "completed", got.Status)
	assert.Regexp(t, `^run-[0-9a-f]{16}$`, got.RunID)
	assert.Nil(t, got.Error)
	require.Len(t, got.Output, 2, "the tool call, the answer")
	require.Len(t, got.Output[0].ToolCalls(), 1)
	assert.Equal(t, "call_Q7x", got.Output[0].ToolCalls()[0].ID)
	assert.Equal(t, "12.5 times 8 is 100.", got.Output[1].Text())
	assert.Equal(t, jsonUsage{PromptTokens: 96 + 131, CompletionTokens: 21 + 9, TotalTokens: 117 + 140}, got.Usage,
		"the usage the server reported for both calls")
}

// A server that refuses the key fails the turn: exit 1, kind forbidden.
func TestCLIOpenAIChatUnauthorized(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-local-test.",`+
			`"type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
	}))
	defer ts.Close()
	stdout, stderr, code := runWithEnv(t, chatEnv(ts.URL), "run", openaiChat, "--message", "hi", "--json")
	assert.Equal(t, exitFailed, code, stderr)
	var got jsonResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	assert.Equal(t, "failed", got.Status)
	require.NotNil(t, got.Error)
	assert.Equal(t, "forbidden", got.Error.Kind)
	assert.Contains(t, got.Error.Message, "Incorrect API key provided")
}

// validate builds the document, so its environment variables must be
// set; it never calls the server.
func TestCLIOpenAIChatValidate(t *testing.T) {
	t.Parallel()
	_, stderr, code := runWithEnv(t, chatEnv("http://127.0.0.1:1"), "validate", openaiChat)
	assert.Equal(t, exitOK, code, stderr)

	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") {
			env = append(env, kv)
		}
	}
	_, stderr, code = runWithEnv(t, env, "validate", openaiChat)
	assert.Equal(t, exitBadInput, code, stderr)
	assert.Contains(t, stderr, `deploy.yaml:20: resources.llm`)
	assert.Contains(t, stderr, `environment variable "OPENAI_API_KEY" is not set`, "the first unset one, by settings key")
}
