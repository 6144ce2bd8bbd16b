package serve_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve"
)

// runEcho runs an echo turn in the session and waits for it.
func (ts *testServer) runEcho(key, sid, text string) string {
	ts.t.Helper()
	tid := ts.startTurn(key, sid, text)
	r := ts.do(http.MethodGet, "/api/sessions/"+sid+"/turns/"+tid+"/wait", key, "")
	require.Equal(ts.t, "completed", r.json(ts.t)["status"], "%s", r.body)
	return tid
}

// logBytes is the bytes of a finished turn's events as the log counts
// them (the data of each).
func (ts *testServer) logBytes(key, sid, tid string) int {
	ts.t.Helper()
	s := ts.stream(context.Background(), "/api/sessions/"+sid+"/turns/"+tid+"/events", key, "")
	defer s.close()
	n := 0
	for _, ev := range s.rest(ts.t) {
		n += len(ev.data)
	}
	return n
}

// REF 11.8.1
// A tenant's kept turn logs stay within Options.MaxTenantEventBytes
// across its sessions: the oldest finished turns' logs are freed first
// (their streams answer 410, their results stay); another tenant's logs
// are not touched.
func TestTenantEventBudget(t *testing.T) {
	t.Parallel()
	probe := newTestServer(t, serve.Options{})
	sid := probe.openSession(acmeKey, "echo")
	one := probe.logBytes(acmeKey, sid, probe.runEcho(acmeKey, sid, "a few words of text"))
	require.Positive(t, one)

	ts := newTestServer(t, serve.Options{MaxTenantEventBytes: one*5/2 + 1})
	bravo := ts.openSession(bravoKey, "mirror")
	bravoTurn := ts.startTurn(bravoKey, bravo, "a few words of text")
	ts.do(http.MethodGet, "/api/sessions/"+bravo+"/turns/"+bravoTurn+"/wait", bravoKey, "")
	s1, s2 := ts.openSession(acmeKey, "echo"), ts.openSession(acmeKey, "echo")
	var turns [][2]string
	for i := range 4 {
		sid := []string{s1, s2}[i%2]
		turns = append(turns, [2]string{sid, ts.runEcho(acmeKey, sid, "a few words of text")})
	}
	for i, st := range turns {
		base := "/api/sessions/" + st[0] + "/turns/" + st[1]
		r := ts.do(http.MethodGet, base+"/events", acmeKey, "")
		if i < 2 {
			assert.Equal(t, http.StatusGone, r.status, "turn %d's log was freed: %s", i, r.body)
		} else {
			assert.Equal(t, http.StatusOK, r.status, "turn %d's log is kept: %s", i, r.body)
			assert.Contains(t, string(r.body), "event: end")
		}
		r = ts.do(http.MethodGet, base, acmeKey, "")
		assert.Equal(t, "completed", r.json(t)["status"], "turn %d's result stays", i)
		assert.Contains(t, r.json(t)["text"], "echo:")
	}
	r := ts.do(http.MethodGet, "/api/sessions/"+bravo+"/turns/"+bravoTurn+"/events", bravoKey, "")
	assert.Equal(t, http.StatusOK, r.status, "bravo's log is bravo's budget: %s", r.body)
}

// REF 11.8.2
// Past Options.MaxStreamsPerTurn open streams on one turn, another is
// 429; a closed stream frees its place.
func TestStreamsPerTurn(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{MaxStreamsPerTurn: 2})
	sid := ts.openSession(acmeKey, "asker")
	tid := ts.startTurn(acmeKey, sid, "go")
	path := "/api/sessions/" + sid + "/turns/" + tid + "/events"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := ts.stream(ctx, path, acmeKey, ""), ts.stream(ctx, path, acmeKey, "")
	a.until(t, "prompt")
	b.until(t, "prompt")
	r := ts.do(http.MethodGet, path, acmeKey, "")
	assert.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	a.close()
	// The server sees the closed connection and ends that stream: a new
	// one gets its place (a bounded loop, not a timed wait).
	status := 0
	for range 10000 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.http.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+acmeKey)
		resp, err := ts.http.Client().Do(req)
		require.NoError(t, err)
		status = resp.StatusCode
		resp.Body.Close()
		if status == http.StatusOK {
			break
		}
	}
	assert.Equal(t, http.StatusOK, status, "a closed stream frees its place")
	b.close()
}

// REF 11.8.3
// Last-Event-ID that is not a non-negative integer is 400; one past the
// end of a finished turn's log streams nothing and ends.
func TestLastEventIDAbuse(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "echo")
	tid := ts.runEcho(acmeKey, sid, "hi")
	path := ts.http.URL + "/api/sessions/" + sid + "/turns/" + tid + "/events"
	for _, id := range []string{"-1", "abc", "1e3", "99999999999999999999999", "0x10", "+1"} {
		req, err := http.NewRequest(http.MethodGet, path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+acmeKey)
		req.Header.Set("Last-Event-ID", id)
		resp, err := ts.http.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "Last-Event-ID %q", id)
	}
	s := ts.stream(context.Background(), "/api/sessions/"+sid+"/turns/"+tid+"/events", acmeKey, "9223372036854775807")
	assert.Empty(t, s.rest(t))
	s.close()
}

// REF 11.8.1
// A deleted session's turns no longer count against its tenant's event
// budget: the next session's turns keep their logs.
func TestTenantEventBudgetAfterDelete(t *testing.T) {
	t.Parallel()
	probe := newTestServer(t, serve.Options{})
	sid := probe.openSession(acmeKey, "echo")
	one := probe.logBytes(acmeKey, sid, probe.runEcho(acmeKey, sid, "a few words of text"))

	ts := newTestServer(t, serve.Options{MaxTenantEventBytes: one*5/2 + 1})
	old := ts.openSession(acmeKey, "echo")
	ts.runEcho(acmeKey, old, "a few words of text")
	ts.runEcho(acmeKey, old, "a few words of text")
	r := ts.do(http.MethodDelete, "/api/sessions/"+old, acmeKey, "")
	require.Equal(t, http.StatusNoContent, r.status, "%s", r.body)
	sid = ts.openSession(acmeKey, "echo")
	first := ts.runEcho(acmeKey, sid, "a few words of text")
	ts.runEcho(acmeKey, sid, "a few words of text")
	r = ts.do(http.MethodGet, "/api/sessions/"+sid+"/turns/"+first+"/events", acmeKey, "")
	assert.Equal(t, http.StatusOK, r.status, "the deleted session's logs were not counted: %s", r.body)
}

// REF 11.8.14
// A tenant holds at most Options.MaxHeldPerTenant waits and event streams
// open at once: one more wait or stream is 429 naming the quota, with
// Retry-After; another tenant's are not counted, and a slot frees when
// its request ends.
func TestHeldRequestsBoundedPerTenant(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{MaxHeldPerTenant: 2})
	done := ts.openSession(acmeKey, "echo")
	doneTurn := ts.runEcho(acmeKey, done, "already done")
	sid := ts.openSession(acmeKey, "asker")
	tid := ts.startTurn(acmeKey, sid, "hold on") // waits for its prompt's answer
	base := "/api/sessions/" + sid + "/turns/" + tid
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := ts.stream(ctx, base+"/events", acmeKey, "")
	defer first.close()
	second := ts.stream(ctx, base+"/events", acmeKey, "")
	defer second.close()

	for _, path := range []string{base + "/wait?timeout=50ms", base + "/events"} {
		r := ts.do(http.MethodGet, path, acmeKey, "")
		require.Equal(t, http.StatusTooManyRequests, r.status, "%s: %s", path, r.body)
		assert.Equal(t, "held_requests", r.json(t)["error"].(map[string]any)["quota"], "%s", r.body)
		assert.Equal(t, "1", r.header.Get("Retry-After"))
	}
	// A settled turn's wait holds nothing, and another tenant is not counted.
	r := ts.do(http.MethodGet, "/api/sessions/"+done+"/turns/"+doneTurn+"/wait", acmeKey, "")
	assert.Equal(t, http.StatusOK, r.status, "%s", r.body)
	bravo := ts.openSession(bravoKey, "mirror")
	bravoTurn := ts.startTurn(bravoKey, bravo, "mine")
	r = ts.do(http.MethodGet, "/api/sessions/"+bravo+"/turns/"+bravoTurn+"/wait", bravoKey, "")
	assert.Equal(t, http.StatusOK, r.status, "%s", r.body)

	second.close() // its handler ends and frees the slot
	require.Eventually(t, func() bool {
		return ts.do(http.MethodGet, base+"/wait?timeout=1ms", acmeKey, "").status == http.StatusOK
	}, 30*time.Second, 10*time.Millisecond)
}
