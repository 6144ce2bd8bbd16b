package serve

import (
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
)

// checkDecoded fails unless err is nil or a Validation error.
func checkDecoded(t *testing.T, err error) {
	t.Helper()
	if err != nil && !fault.Is(err, fault.Validation) {
		t.Fatalf("a bad body is a Validation error, got %v", err)
	}
	if err != nil { // REF 11.8.8: the client's terms, not the server's Go types
		for _, leak := range []string{"Go struct", "Go value", "interface {}", "json: ", "serve."} {
			if strings.Contains(err.Error(), leak) {
				t.Fatalf("the error shows %q: %v", leak, err)
			}
		}
	}
}

// REF 11.5.1
func FuzzDecodeChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"echo","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"echo","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
		`{"model":"m","messages":[{"role":"developer","content":"d"},{"role":"user","content":"\u0000"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`,
		`{"model":"m","messages":[]}`, `[]`, `{"model":`, ``,
		`{"model":"m","n":2,"messages":[{"role":"user","content":"x"}]}`, `{"model":"m","n":null,"messages":[{"role":"user","content":"x"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, msgs, err := decodeChatRequest(strings.NewReader(body))
		checkDecoded(t, err)
		if err != nil {
			return
		}
		if req.N != nil && *req.N != 1 {
			t.Fatalf("accepted %q with n %d", body, *req.N)
		}
		if req.Model == "" || len(msgs) != len(req.Messages) || len(msgs) == 0 {
			t.Fatalf("accepted %q as model %q with %d of %d messages", body, req.Model, len(msgs), len(req.Messages))
		}
		for i, m := range msgs {
			if err := m.Validate(); err != nil {
				t.Fatalf("message %d of %q is invalid: %v", i, body, err)
			}
		}
	})
}

// REF 11.5.1
func FuzzDecodeTurnRequest(f *testing.F) {
	for _, s := range []string{
		`{"text":"hi"}`, `{"message":{"role":"user","parts":[{"type":"text","text":"x"}]}}`,
		`{"text":"a","inputs":{"k":[1,2]},"metadata":{"a":"b"}}`, `{"text":"a","message":{"role":"user","parts":[]}}`,
		`{"message":{"role":"tool","parts":[{"type":"tool_call"}]}}`, `{}`, `{"text":1}`, `{"x":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := decodeTurnRequest(strings.NewReader(body))
		checkDecoded(t, err)
		if err == nil {
			if err := req.Message.Validate(); err != nil {
				t.Fatalf("accepted an invalid message from %q: %v", body, err)
			}
		}
	})
}

// REF 11.5.1
func FuzzDecodeSmallBodies(f *testing.F) {
	for _, s := range []string{
		`{"agent":"echo"}`, `{"agent":"echo","context_id":"c"}`, `{"agent":"echo","context_id":" c"}`,
		`{"text":"yes"}`, `{"parts":[{"type":"text","text":"y"}]}`, `{"text":"a","parts":[]}`,
		`{"parts":[{"type":"data","data":"{"}]}`, `{}`, `null`,
		`{"agent":7}`, `{"agent":"echo","context_id":"a\u0000b"}`, `{"parts":"x"}`, `{"metadata":{"a":1}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		open, err := decodeOpenRequest(strings.NewReader(body))
		checkDecoded(t, err)
		if err == nil && open.Agent == "" {
			t.Fatalf("accepted %q without an agent", body)
		}
		if err == nil && checkContextID(open.ContextID) != nil {
			t.Fatalf("accepted the context id %q (REF 11.8.10)", open.ContextID)
		}
		_, err = decodeAnswer(strings.NewReader(body))
		checkDecoded(t, err)
	})
}

// REF 11.5.1
func FuzzParseKeys(f *testing.F) {
	for _, s := range []string{
		"tenants:\n  acme:\n    keys: [sha256:afacab3575137afa4e00d9cbcafcb14c9ae25f779d964eb0ea5b2c4eb5dfd163]\n",
		"tenants:\n  a: {keys: []}\n", "tenants: [\n", "tenants: {x: {keys: [plain]}}\n", "", "a: &a [*a]\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		k, err := ParseKeys("keys.yaml", []byte(doc))
		checkDecoded(t, err)
		if err == nil && len(k.Tenants()) == 0 {
			t.Fatalf("accepted %q with no tenant", doc)
		}
	})
}
