package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve"
)

// openSession opens a session of agentID for key and returns its id.
func (ts *testServer) openSession(key, agentID string) string {
	ts.t.Helper()
	r := ts.do(http.MethodPost, "/api/sessions", key, fmt.Sprintf(`{"agent":%q}`, agentID))
	require.Equal(ts.t, http.StatusCreated, r.status, "%s", r.body)
	return r.json(ts.t)["id"].(string)
}

// startTurn starts a turn with text and returns its id.
func (ts *testServer) startTurn(key, sid, text string) string {
	ts.t.Helper()
	r := ts.do(http.MethodPost, "/api/sessions/"+sid+"/turns", key, fmt.Sprintf(`{"text":%q}`, text))
	require.Equal(ts.t, http.StatusCreated, r.status, "%s", r.body)
	return r.json(ts.t)["id"].(string)
}

func promptID(t testing.TB, ev sseEvent) string {
	t.Helper()
	var p struct {
		PromptID string `json:"prompt_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(ev.data), &p))
	require.NotEmpty(t, p.PromptID)
	return p.PromptID
}

// REF 11.3.1 REF 11.3.2 REF 11.3.3 REF 11.3.5
// A turn over the native API: the stream shows the question, a steer
// sent mid-turn shows in the result, the answer resumes the turn, and a
// stream dropped halfway and resumed from Last-Event-ID reads every event
// once.
func TestNativeTurnSteerAnswerResume(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "asker")
	tid := ts.startTurn(acmeKey, sid, "hi")
	base := "/api/sessions/" + sid + "/turns/" + tid

	first := ts.stream(context.Background(), base+"/events", acmeKey, "")
	part1 := first.until(t, "prompt")
	pid := promptID(t, part1[len(part1)-1])
	first.close() // the connection drops

	r := ts.do(http.MethodGet, base, acmeKey, "")
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "running", r.json(t)["status"])
	assert.Len(t, r.json(t)["prompts"], 1, "the open question is listed")

	r = ts.do(http.MethodPost, base+"/steer", acmeKey, `{"text":"left"}`)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	assert.EqualValues(t, 1, r.json(t)["pending_steer"])
	r = ts.do(http.MethodPost, base+"/prompts/"+pid, acmeKey, `{"text":"yes"}`)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)

	resumed := ts.stream(context.Background(), base+"/events", acmeKey, part1[len(part1)-1].id)
	part2 := resumed.rest(t)
	resumed.close()
	require.NotEmpty(t, part2)
	assert.Equal(t, "end", part2[len(part2)-1].event)
	assert.JSONEq(t, `{"status":"completed"}`, part2[len(part2)-1].data)

	whole := ts.stream(context.Background(), base+"/events", acmeKey, "")
	all := whole.rest(t)
	whole.close()
	assert.Equal(t, all, append(part1, part2...), "the dropped and the resumed stream together are the whole stream")
	for i, ev := range all {
		assert.Equal(t, strconv.Itoa(i+1), ev.id, "ids count up from 1 without a gap")
	}
	assert.Equal(t, `asking answer=yes steered=["left"]`, deltaText(t, all))

	r = ts.do(http.MethodGet, base+"/wait?timeout=1m", acmeKey, "")
	require.Equal(t, http.StatusOK, r.status)
	res := r.json(t)
	assert.Equal(t, "completed", res["status"])
	assert.Equal(t, `answer=yes steered=["left"]`, res["text"], "the steer is in the result")

	r = ts.do(http.MethodPost, base+"/steer", acmeKey, `{"text":"late"}`)
	assert.Equal(t, http.StatusConflict, r.status, "a steer to a finished turn is reported as not delivered: %s", r.body)
	assert.Equal(t, "not_available", r.json(t)["error"].(map[string]any)["kind"])
	r = ts.do(http.MethodPost, base+"/prompts/"+pid, acmeKey, `{"text":"again"}`)
	assert.Contains(t, []int{http.StatusConflict, http.StatusNotFound}, r.status, "%s", r.body)
}

// REF 11.3.4
// An interrupt stops a turn waiting for its answer: it ends interrupted,
// and a steer after it is refused.
func TestNativeInterrupt(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "asker")
	tid := ts.startTurn(acmeKey, sid, "hi")
	base := "/api/sessions/" + sid + "/turns/" + tid
	s := ts.stream(context.Background(), base+"/events", acmeKey, "")
	s.until(t, "prompt")

	r := ts.do(http.MethodPost, base+"/interrupt", acmeKey, `{"detail":"enough"}`)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	rest := s.rest(t)
	s.close()
	var end struct{ Status string }
	require.NoError(t, json.Unmarshal([]byte(rest[len(rest)-1].data), &end))
	assert.Equal(t, "interrupted", end.Status)
	r = ts.do(http.MethodGet, base+"/wait", acmeKey, "")
	assert.Equal(t, "interrupted", r.json(t)["status"])
	r = ts.do(http.MethodPost, base+"/steer", acmeKey, `{"text":"late"}`)
	assert.Equal(t, http.StatusConflict, r.status)

	// The session goes on: a new turn of it runs.
	tid2 := ts.startTurn(acmeKey, sid, "again")
	assert.NotEqual(t, tid, tid2)
	r = ts.do(http.MethodGet, "/api/sessions/"+sid+"/turns", acmeKey, "")
	assert.Len(t, r.json(t)["turns"], 2)
	r = ts.do(http.MethodDelete, "/api/sessions/"+sid, acmeKey, "")
	assert.Equal(t, http.StatusNoContent, r.status, "%s", r.body)
	r = ts.do(http.MethodGet, "/api/sessions/"+sid, acmeKey, "")
	assert.Equal(t, http.StatusNotFound, r.status)
}

// REF 11.3.6
// Bad requests get a 400 naming the problem; unknown routes 404; health,
// readiness and the OpenAPI document need no key.
func TestNativeBadRequests(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "echo")
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		kind                     string
	}{
		{"unknown field", "POST", "/api/sessions", `{"agent":"echo","x":1}`, 400, "validation"},
		{"no agent", "POST", "/api/sessions", `{}`, 400, "validation"},
		{"unknown agent", "POST", "/api/sessions", `{"agent":"nobody"}`, 404, "not_found"},
		{"two values", "POST", "/api/sessions/" + sid + "/turns", `{"text":"a"}{}`, 400, "validation"},
		{"text and message", "POST", "/api/sessions/" + sid + "/turns", `{"text":"a","message":{"role":"user","parts":[{"type":"text","text":"b"}]}}`, 400, "validation"},
		{"invalid message", "POST", "/api/sessions/" + sid + "/turns", `{"message":{"role":"king","parts":[]}}`, 400, "validation"},
		{"empty", "POST", "/api/sessions/" + sid + "/turns", `{}`, 400, "validation"},
		{"unknown turn", "GET", "/api/sessions/" + sid + "/turns/run-0000000000000000", ``, 404, "not_found"},
		{"unknown route", "GET", "/api/nothing", ``, 404, "not_found"},
	} {
		r := ts.do(tc.method, tc.path, acmeKey, tc.body)
		assert.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.body)
		assert.Equal(t, tc.kind, r.json(t)["error"].(map[string]any)["kind"], tc.name)
	}
	for _, path := range []string{"/healthz", "/readyz", "/openapi.json"} {
		r := ts.do("GET", path, "", "")
		assert.Equal(t, http.StatusOK, r.status, path)
	}
	var doc map[string]any
	require.NoError(t, json.Unmarshal(ts.do("GET", "/openapi.json", "", "").body, &doc))
	assert.Equal(t, "3.1.0", doc["openapi"])
}

// REF 11.3.6
// Every path of /openapi.json is a route: none of its operations reaches
// the "no route" answer.
func TestOpenAPIPathsAreRoutes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(ts.do("GET", "/openapi.json", "", "").body, &doc))
	require.NotEmpty(t, doc.Paths)
	fill := strings.NewReplacer("{sid}", "s", "{tid}", "t", "{pid}", "p", "{model}", "m")
	for path, ops := range doc.Paths {
		for method := range ops {
			r := ts.do(strings.ToUpper(method), fill.Replace(path), acmeKey, "{}")
			assert.NotContains(t, string(r.body), "no route", "%s %s", method, path)
			assert.NotEqual(t, http.StatusMethodNotAllowed, r.status, "%s %s", method, path)
		}
	}
}
