package serve_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve"
)

// REF 11.1.3 REF 11.1.4
// Tenant bravo cannot list, read, stream, steer, interrupt, answer or
// delete acme's session or turn: each is 404, as for what does not
// exist; a wrong key is 401 everywhere.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "asker")
	tid := ts.startTurn(acmeKey, sid, "hi")
	base := "/api/sessions/" + sid + "/turns/" + tid
	s := ts.stream(context.Background(), base+"/events", acmeKey, "")
	s.until(t, "prompt")
	s.close()

	r := ts.do("GET", "/api/sessions", bravoKey, "")
	require.Equal(t, http.StatusOK, r.status)
	assert.Empty(t, r.json(t)["sessions"], "bravo lists none of acme's sessions")
	r = ts.do("GET", "/api/sessions", acmeKey2, "")
	assert.Len(t, r.json(t)["sessions"], 1, "another key of acme sees acme's session")

	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/api/sessions/" + sid, ""},
		{"GET", "/api/sessions/" + sid + "/turns", ""},
		{"POST", "/api/sessions/" + sid + "/turns", `{"text":"x"}`},
		{"GET", base, ""},
		{"GET", base + "/wait?timeout=1ms", ""},
		{"GET", base + "/events", ""},
		{"POST", base + "/steer", `{"text":"x"}`},
		{"POST", base + "/interrupt", ""},
		{"POST", base + "/prompts/p", `{"text":"x"}`},
		{"DELETE", "/api/sessions/" + sid, ""},
	} {
		r := ts.do(tc.method, tc.path, bravoKey, tc.body)
		assert.Equal(t, http.StatusNotFound, r.status, "bravo %s %s: %s", tc.method, tc.path, r.body)
		r = ts.do(tc.method, tc.path, "wrong-key", tc.body)
		assert.Equal(t, http.StatusUnauthorized, r.status, "wrong key %s %s", tc.method, tc.path)
		r = ts.do(tc.method, tc.path, "", tc.body)
		assert.Equal(t, http.StatusUnauthorized, r.status, "no key %s %s", tc.method, tc.path)
	}
	// bravo cannot open a session of acme's agent, or run it as a model.
	r = ts.do("POST", "/api/sessions", bravoKey, `{"agent":"asker"}`)
	assert.Equal(t, http.StatusNotFound, r.status)
	r = ts.do("POST", "/v1/chat/completions", bravoKey, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "not_found_error", r.json(t)["error"].(map[string]any)["type"])
	r = ts.do("GET", "/v1/models", bravoKey, "")
	assert.Equal(t, []any{map[string]any{"id": "mirror", "object": "model", "created": float64(0), "owned_by": "bravo"}}, r.json(t)["data"])

	// acme's turn was untouched by all of it.
	r = ts.do("GET", base, acmeKey, "")
	assert.Equal(t, "running", r.json(t)["status"])
	assert.EqualValues(t, 0, r.json(t)["pending_steer"])
}

// REF 11.1.5
// A rate quota refuses the tenant's next turn with 429, naming the
// quota, with Retry-After; other tenants go on.
func TestQuotaRejected(t *testing.T) {
	t.Parallel()
	var rejected []string
	ts := newTestServer(t, serve.Options{OnQuotaRejected: func(tenant, quota string) {
		rejected = append(rejected, tenant+"/"+quota)
	}})
	chat := `{"model":"metered","messages":[{"role":"user","content":"hi"}]}`
	// The first turn spends 10 tokens of 5: its usage report fails it.
	ts.do("POST", "/v1/chat/completions", meterKey, chat)
	r := ts.do("POST", "/v1/chat/completions", meterKey, chat)
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	e := r.json(t)["error"].(map[string]any)
	assert.Equal(t, "model_tokens_per_minute", e["code"])
	assert.Equal(t, "rate_limit_error", e["type"])
	assert.Contains(t, e["message"], `tenant "meter": quota model_tokens_per_minute of 5 reached`)
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After: %q", r.header.Get("Retry-After"))
	assert.True(t, secs >= 1 && secs <= 60, "Retry-After %d is within the minute", secs)

	sid := ts.openSession(meterKey, "metered")
	r = ts.do("POST", "/api/sessions/"+sid+"/turns", meterKey, `{"text":"x"}`)
	require.Equal(t, http.StatusTooManyRequests, r.status)
	assert.Equal(t, "model_tokens_per_minute", r.json(t)["error"].(map[string]any)["quota"])
	assert.NotEmpty(t, r.header.Get("Retry-After"))
	assert.Equal(t, []string{"meter/model_tokens_per_minute", "meter/model_tokens_per_minute"}, rejected)

	r = ts.do("POST", "/v1/chat/completions", acmeKey, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, http.StatusOK, r.status, "acme is not held back: %s", r.body)
}
