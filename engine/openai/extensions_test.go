package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ext(provider, id, fields string) model.Extension {
	return model.Extension{Provider: provider, ID: id, Fields: json.RawMessage(fields)}
}

// REF 5.3.1: the fields of the extensions for this provider's id are
// merged into the body the server receives, unary and streamed; the
// extensions of other providers are left out.
func TestExtensionsReachTheBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		id     string
		stream bool
		exts   []model.Extension
		want   map[string]any // extra keys the body must hold
		absent []string
	}{
		{"default id", "", false, []model.Extension{ext("openai", "reasoning", `{"reasoning_effort":"low","seed":7}`)},
			map[string]any{"reasoning_effort": "low", "seed": 7.0}, nil},
		{"own id, others ignored", "vllm", false, []model.Extension{
			ext("vllm", "sampling", `{"top_k":20,"chat_template_kwargs":{"enable_thinking":false}}`),
			ext("openai", "other", `{"reasoning_effort":"high"}`)},
			map[string]any{"top_k": 20.0, "chat_template_kwargs": map[string]any{"enable_thinking": false}}, []string{"reasoning_effort"}},
		{"streamed", "", true, []model.Extension{ext("openai", "a", `{"user":"u1"}`), ext("openai", "b", `{"seed":1}`)},
			map[string]any{"user": "u1", "seed": 1.0}, nil},
		{"none", "", false, nil, nil, []string{"seed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reply := replyJSON(t, 200, "chat_text.json")
			if tt.stream {
				reply = replySSE(t, "stream_text.sse")
			}
			w := newWire(t, reply)
			p := newProvider(t, w.URL, func(s *Settings) { s.ID = tt.id })
			req := userRequest("Hi")
			req.Extensions = tt.exts
			var onDelta func(model.Delta) error
			if tt.stream {
				onDelta = func(model.Delta) error { return nil }
			}
			_, err := p.Generate(context.Background(), req, onDelta)
			require.NoError(t, err)
			seen := w.seen()
			require.Len(t, seen, 1)
			body := seen[0].Body
			for k, v := range tt.want {
				assert.Equal(t, v, body[k], k)
			}
			for _, k := range tt.absent {
				assert.NotContains(t, body, k)
			}
			assert.Equal(t, "gpt-4o-mini", body["model"], "the driver's own keys stay")
			assert.Len(t, body["messages"], 1)
			assert.Equal(t, tt.stream, body["stream"] == true)
		})
	}
}

// REF 5.3.1: a field the driver sets, or one two extensions set, is
// a Validation error naming the extension; nothing is sent.
func TestExtensionsCannotOverrideTheDriver(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 200, "chat_text.json"))
	p := newProvider(t, w.URL)
	tests := []struct {
		name string
		exts []model.Extension
		want string
	}{
		{"model", []model.Extension{ext("openai", "x", `{"model":"gpt-5"}`)}, `extension "x": field "model" is set by the driver`},
		{"messages", []model.Extension{ext("openai", "x", `{"messages":[]}`)}, `field "messages"`},
		{"tools", []model.Extension{ext("openai", "x", `{"tools":[]}`)}, `field "tools"`},
		{"stream", []model.Extension{ext("openai", "x", `{"stream":true}`)}, `field "stream"`},
		{"stream options", []model.Extension{ext("openai", "x", `{"stream_options":{}}`)}, `field "stream_options"`},
		{"twice", []model.Extension{ext("openai", "a", `{"seed":1}`), ext("openai", "b", `{"seed":2}`)},
			`extension "b": field "seed" is already set by extension "a"`},
		{"not an object", []model.Extension{ext("openai", "x", `[1]`)}, "fields must be a JSON object"},
	}
	for _, tt := range tests {
		req := userRequest("Hi")
		req.Extensions = tt.exts
		_, err := p.Generate(context.Background(), req, nil)
		require.ErrorIs(t, err, fault.Validation, tt.name)
		assert.Contains(t, err.Error(), tt.want, tt.name)
	}
	req := userRequest("Hi")
	req.Extensions = []model.Extension{ext("other", "x", `{"model":"ignored"}`)}
	_, err := p.Generate(context.Background(), req, nil)
	require.NoError(t, err, "another provider's extension is not this driver's business")
	assert.Len(t, w.seen(), 1)
}

// FuzzExtensionFields merges any extension fields into a real request
// body: it never panics, fails only with Validation, and an accepted
// merge gives a JSON object that keeps the driver's keys and holds every
// field.
func FuzzExtensionFields(f *testing.F) {
	for _, s := range []string{`{"seed":1}`, `{"model":"x"}`, `{}`, `[1]`, `null`, `{"a":{"b":[1,2]}}`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	p, err := New(Settings{APIKey: "k", Model: "m"})
	if err != nil {
		f.Fatal(err)
	}
	defer p.Close()
	f.Fuzz(func(t *testing.T, fields []byte) {
		creq, err := p.chatRequest(userRequest("Hi"), true)
		if err != nil {
			t.Fatal(err)
		}
		extra, err := p.extraFields([]model.Extension{ext(DefaultID, "x", string(fields))}, creq)
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("not a Validation error: %v", err)
			}
			return
		}
		body, err := json.Marshal(creq)
		if err != nil {
			t.Fatal(err)
		}
		req := httptestRequest(t, withExtraBody(context.Background(), extra), body)
		if err := mergeExtraBody(req); err != nil {
			t.Fatal(err)
		}
		var merged map[string]json.RawMessage
		raw := readAll(t, req)
		if err := json.Unmarshal(raw, &merged); err != nil {
			t.Fatalf("merged body is not a JSON object: %v: %s", err, raw)
		}
		if string(merged["model"]) != `"m"` {
			t.Fatalf("model changed: %s", merged["model"])
		}
		for k := range extra {
			if _, ok := merged[k]; !ok {
				t.Fatalf("field %q missing", k)
			}
		}
	})
}

func httptestRequest(t *testing.T, ctx context.Context, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://x/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func readAll(t *testing.T, req *http.Request) []byte {
	t.Helper()
	b, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
