package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/serve"
)

// REF 11.8.8
// A body of the wrong JSON types is 400 with a message that names the
// field and the JSON type it wants, never a Go type or field name.
func TestBodyTypeErrorsNameFieldsNotGoTypes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "echo")
	for _, c := range []struct{ path, body, field string }{
		{"/api/sessions", `{"agent":7}`, `"agent"`},
		{"/api/sessions/" + sid + "/turns", `{"text":"x","inputs":"not an object"}`, `"inputs"`},
		{"/api/sessions/" + sid + "/turns", `{"message":{"role":"user","parts":"x"}}`, `"message.parts"`},
		{"/api/sessions/" + sid + "/turns", `{"text":"x","metadata":{"a":1}}`, `"metadata"`},
		{"/api/sessions/" + sid + "/turns", `{"text":`, "unexpected end"},
		{"/api/sessions/" + sid + "/turns", `{"text":"x"} garbage`, "more than one JSON value"},
		{"/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"x"}],"stream":"yes"}`, `"stream"`},
		{"/v1/chat/completions", `{"model":"echo","messages":{}}`, `"messages"`},
	} {
		r := ts.do(http.MethodPost, c.path, acmeKey, c.body)
		assert.Equal(t, http.StatusBadRequest, r.status, "%s %s: %s", c.path, c.body, r.body)
		var body struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(r.body, &body), "%s", r.body)
		msg := body.Error.Message
		assert.Contains(t, msg, c.field, "%s: the message names the field", c.body)
		for _, leak := range []string{"Go struct", "Go value", "serve.", "turnRequest", "openRequest", "chatRequest", "interface {}", "map[string]", "[]message", "json: "} {
			assert.False(t, strings.Contains(msg, leak), "%s: the message shows %q: %s", c.body, leak, msg)
		}
	}
}

// REF 11.8.9
// A request refused for its key does not wait for its body: an anonymous
// client that declares a body and sends it slowly (or never) gets its
// 401 and loses the connection, instead of holding it while the server
// reads what it declared.
func TestRefusedRequestDoesNotWaitForItsBody(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	for _, c := range []struct{ name, req, auth string }{
		{"no key", "POST /api/sessions", ""},
		{"wrong key", "POST /api/sessions", "Authorization: Bearer nope\r\n"},
		{"health", "GET /healthz", ""},
		{"readiness", "GET /readyz", ""},
		{"console", "GET /", ""},
		{"console file", "GET /console/app.js", ""},
		{"openapi", "GET /openapi.json", ""},
	} {
		conn, err := net.Dial("tcp", ts.http.Listener.Addr().String())
		require.NoError(t, err)
		_, err = fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: x\r\n%sContent-Length: 100000\r\n\r\n{\"agent\":", c.req, c.auth)
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute))) // a failure, not a hang
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, "%s: the server answered before the body came", c.name)
		if c.auth != "" || strings.HasPrefix(c.req, "POST") {
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, c.name)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err, c.name)
		_, err = conn.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "%s: the server closes the connection", c.name)
		conn.Close()
	}
}

// REF 11.8.10
// A context id is any text of at most serve.MaxContextIDBytes bytes
// without control characters: unicode opens a session and reads back as
// sent; a longer one, or one with a control character, is 400 naming the
// field, so that a tenant cannot make every log line, event header and
// span of its sessions megabytes long.
func TestContextIDBounds(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	for _, id := range []string{"会話-1 🐄", "ctx:é/ü", strings.Repeat("é", serve.MaxContextIDBytes/2)} {
		body, err := json.Marshal(map[string]string{"agent": "echo", "context_id": id})
		require.NoError(t, err)
		r := ts.do(http.MethodPost, "/api/sessions", acmeKey, string(body))
		require.Equal(t, http.StatusCreated, r.status, "%.80q: %s", id, r.body)
		assert.Equal(t, id, r.json(t)["context_id"])
	}
	for _, id := range []string{strings.Repeat("x", serve.MaxContextIDBytes+1), strings.Repeat("x", 1<<20), "a\u0000b", "line\nbreak", "bell\u0007", "del\u007f", "c1\u0085"} {
		body, err := json.Marshal(map[string]string{"agent": "echo", "context_id": id})
		require.NoError(t, err)
		r := ts.do(http.MethodPost, "/api/sessions", acmeKey, string(body))
		assert.Equal(t, http.StatusBadRequest, r.status, "%.40q: %.200s", id, r.body)
		assert.Contains(t, string(r.body), "context_id", "%.40q", id)
		assert.Less(t, len(r.body), 1024, "the error does not echo a long id whole")
	}
}

// REF 11.1.9
// One tenant cannot take every session the runtime may hold: its native
// sessions stop at its share (429 naming the quota "sessions"), and
// another tenant still opens sessions and runs completions.
func TestOneTenantCannotTakeEverySession(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	opened := 0
	var last response
	for i := 0; i <= ts.rt.Config().Sessions.MaxSessions; i++ {
		last = ts.do(http.MethodPost, "/api/sessions", acmeKey, `{"agent":"echo"}`)
		if last.status != http.StatusCreated {
			break
		}
		opened++
	}
	require.Equal(t, http.StatusTooManyRequests, last.status, "%s", last.body)
	assert.Equal(t, "sessions", last.json(t)["error"].(map[string]any)["quota"], "%s", last.body)
	assert.Less(t, opened, ts.rt.Config().Sessions.MaxSessions, "acme stopped before the runtime's bound")

	r := ts.do(http.MethodPost, "/api/sessions", bravoKey, `{"agent":"mirror"}`)
	assert.Equal(t, http.StatusCreated, r.status, "another tenant opens a session: %s", r.body)
	r = ts.do(http.MethodPost, "/v1/chat/completions", bravoKey, `{"model":"mirror","messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, http.StatusOK, r.status, "another tenant runs a completion: %s", r.body)

	// A session deleted frees its place.
	sid := ts.do(http.MethodGet, "/api/sessions", acmeKey, "").json(t)["sessions"].([]any)[0].(map[string]any)["id"].(string)
	require.Equal(t, http.StatusNoContent, ts.do(http.MethodDelete, "/api/sessions/"+sid, acmeKey, "").status)
	assert.Equal(t, http.StatusCreated, ts.do(http.MethodPost, "/api/sessions", acmeKey, `{"agent":"echo"}`).status)
}

// REF 11.1.10
// When a reload gives an agent to another tenant, the sessions its former
// tenant opened on it are that tenant's no longer: read, list, start and
// stream are 404 for it, and the new tenant opening the same context
// gets a session of its own, never the former tenant's session id.
func TestReloadThatMovesAnAgentMovesItsSessions(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	r := ts.do(http.MethodPost, "/api/sessions", acmeKey, `{"agent":"echo","context_id":"c1"}`)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	sid := r.json(t)["id"].(string)
	tid := ts.runEcho(acmeKey, sid, "hi")

	data, err := os.ReadFile(ts.path)
	require.NoError(t, err)
	moved := strings.Replace(string(data), "  echo:\n    tenant: acme\n", "  echo:\n    tenant: bravo\n", 1)
	require.NotEqual(t, string(data), moved)
	require.NoError(t, os.WriteFile(ts.path, []byte(moved), 0o600))
	doc, err := deploy.ParseFile(ts.path)
	require.NoError(t, err)
	_, err = ts.rt.Reload(context.Background(), doc)
	require.NoError(t, err)

	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/sessions/" + sid, ""},
		{http.MethodGet, "/api/sessions/" + sid + "/turns", ""},
		{http.MethodGet, "/api/sessions/" + sid + "/turns/" + tid, ""},
		{http.MethodGet, "/api/sessions/" + sid + "/turns/" + tid + "/events", ""},
		{http.MethodPost, "/api/sessions/" + sid + "/turns", `{"text":"again"}`},
	} {
		r := ts.do(c.method, c.path, acmeKey, c.body)
		assert.Equal(t, http.StatusNotFound, r.status, "acme %s %s: %s", c.method, c.path, r.body)
	}
	list := ts.do(http.MethodGet, "/api/sessions", acmeKey, "").json(t)["sessions"].([]any)
	assert.Empty(t, list, "acme lists no session of an agent it no longer has")

	r = ts.do(http.MethodPost, "/api/sessions", bravoKey, `{"agent":"echo","context_id":"c1"}`)
	require.Contains(t, []int{http.StatusCreated, http.StatusOK}, r.status, "%s", r.body)
	assert.NotEqual(t, sid, r.json(t)["id"], "bravo got acme's session id")
}

// REF 11.8.11
// A Last-Event-ID past the last event of a running turn is no id the
// server wrote: 400 naming the last one, instead of a stream that shows
// nothing, not even the end, and closes when the turn ends (a client
// that resumes again would loop).
func TestLastEventIDPastTheEndOfARunningTurn(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "asker")
	tid := ts.startTurn(acmeKey, sid, "hi")
	base := "/api/sessions/" + sid + "/turns/" + tid
	s := ts.stream(context.Background(), base+"/events", acmeKey, "")
	evs := s.until(t, "prompt")
	s.close()
	last := evs[len(evs)-1].id

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"99", "1000000000"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.http.URL+base+"/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+acmeKey)
		req.Header.Set("Last-Event-ID", id)
		resp, err := ts.http.Client().Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "Last-Event-ID %s: %s", id, body)
		assert.Contains(t, string(body), "last event is "+last, "Last-Event-ID %s", id)
	}
	// The last id itself resumes: the answer's events follow.
	s = ts.stream(context.Background(), base+"/events", acmeKey, last)
	defer s.close()
	pid := promptID(t, evs[len(evs)-1])
	require.Equal(t, http.StatusAccepted, ts.do(http.MethodPost, base+"/prompts/"+pid, acmeKey, `{"text":"yes"}`).status)
	end := s.until(t, "end")
	assert.Contains(t, end[len(end)-1].data, "completed")
}

// hoarderAgent emits the text of its last message in 1000-byte tokens,
// then asks a question and waits: its turn holds its events while it
// runs.
const hoarderAgent = `  hoarder:
    tenant: acme
    card: {name: Hoarder}
    capabilities: [emit, ask_user]
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js}
      settings:
        graph:
          name: hoarder
          entry: s
          nodes:
            - id: s
              type: script
              config:
                source: |
                  const main = board.channel(board.MAIN_CHANNEL);
                  const text = main[main.length - 1].parts[0].text;
                  for (let i = 0; i < text.length; i += 1000) host.emit("token", text.slice(i, i + 1000));
                  host.askUser({parts: [{type: "text", text: "more?"}]});
          edges: [{from: s, to: __end__}]
`

// newTestServerWithAgent serves testdata's deployment with one more
// agent (YAML under agents:) and the replacements of edits (old, new
// pairs) made.
func newTestServerWithAgent(t *testing.T, opts serve.Options, agentYAML string, edits ...string) *testServer {
	t.Helper()
	opts.Logger = slog.New(slog.DiscardHandler)
	path := copyTestdata(t)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := strings.Replace(string(data), "  mirror:\n", agentYAML+"  mirror:\n", 1)
	for i := 0; i+1 < len(edits); i += 2 {
		require.Contains(t, doc, edits[i])
		doc = strings.Replace(doc, edits[i], edits[i+1], 1)
	}
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	rt := buildRuntime(t, path)
	keys, err := serve.LoadKeys(filepath.Join(filepath.Dir(path), "keys.yaml"))
	require.NoError(t, err)
	srv, err := serve.New(rt, keys, opts)
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		require.NoError(t, srv.Close())
		hs.Close()
		require.NoError(t, rt.Close())
	})
	return &testServer{t: t, rt: rt, srv: srv, http: hs, path: path}
}

// REF 11.8.12
// A tenant's running turns share its event budget too: turns that emit
// while they wait hold, together, at most about Options.MaxTenantEventBytes
// (each further turn's log overflows), instead of the budget once per
// running turn.
func TestTenantEventBudgetBindsRunningTurns(t *testing.T) {
	t.Parallel()
	const budget = 1 << 20
	ts := newTestServerWithAgent(t, serve.Options{MaxTenantEventBytes: budget}, hoarderAgent)
	text := strings.Repeat("x", 300_000)
	type turn struct{ sid, tid string }
	var turns []turn
	for range 6 {
		sid := ts.openSession(acmeKey, "hoarder")
		turns = append(turns, turn{sid, ts.startTurn(acmeKey, sid, text)})
	}
	held := 0
	for _, tr := range turns {
		s := ts.stream(context.Background(), "/api/sessions/"+tr.sid+"/turns/"+tr.tid+"/events", acmeKey, "")
		for {
			ev, err := s.next()
			require.NoError(t, err)
			require.NotEqual(t, "end", ev.event, "the turn ended: %s", ev.data)
			held += len(ev.data)
			if ev.event == "prompt" || ev.event == "overflow" {
				break
			}
		}
		s.close()
	}
	assert.LessOrEqual(t, held, budget+64<<10, "the tenant's running turns hold %d event bytes", held)
}

// REF 11.3.4
// The interrupt's body is optional however it is sent: none, an empty
// chunked body, or {} are 202.
func TestInterruptWithoutBody(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "echo")
	tid := ts.runEcho(acmeKey, sid, "hi")
	url := ts.http.URL + "/api/sessions/" + sid + "/turns/" + tid + "/interrupt"
	for _, c := range []struct {
		name string
		body io.Reader
	}{{"none", nil}, {"empty chunked", io.MultiReader()}, {"object", strings.NewReader("{}")}} {
		req, err := http.NewRequest(http.MethodPost, url, c.body)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+acmeKey)
		resp, err := ts.http.Client().Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusAccepted, resp.StatusCode, "%s: %s", c.name, body)
	}
}

// burstAgent emits 400 tokens as fast as it can, then answers "done".
const burstAgent = `  burst:
    tenant: acme
    card: {name: Burst}
    capabilities: [emit]
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js}
      settings:
        graph:
          name: burst
          entry: s
          nodes:
            - id: s
              type: script
              config:
                source: |
                  for (let i = 0; i < 400; i++) host.emit("token", "t" + i + " ");
                  board.appendChannel(board.MAIN_CHANNEL, {role: "assistant", parts: [{type: "text", text: "done"}]});
          edges: [{from: s, to: __end__}]
`

// REF 11.3.7
// A turn whose events come faster than its stream's queue takes them
// (runtime.sessions.sink_buffer) loses the rest of its stream, and says
// so with an overflow event, but its end is the turn's own: a turn that
// completed does not end its stream "failed".
func TestStreamThatCannotKeepUpEndsWithTheTurnsStatus(t *testing.T) {
	t.Parallel()
	ts := newTestServerWithAgent(t, serve.Options{}, burstAgent,
		"sessions: {resume: true, max_sessions: 4096}", "sessions: {resume: true, max_sessions: 4096, sink_buffer: 1}")
	for range 3 {
		sid := ts.openSession(acmeKey, "burst")
		tid := ts.startTurn(acmeKey, sid, "go")
		base := "/api/sessions/" + sid + "/turns/" + tid
		r := ts.do(http.MethodGet, base+"/wait", acmeKey, "")
		require.Equal(t, "completed", r.json(t)["status"], "%s", r.body)
		s := ts.stream(context.Background(), base+"/events", acmeKey, "")
		evs := s.rest(t)
		s.close()
		require.NotEmpty(t, evs)
		end := evs[len(evs)-1]
		require.Equal(t, "end", end.event)
		assert.Contains(t, end.data, `"status":"completed"`, "the stream's end is the turn's")
		if n := strings.Count(deltaText(t, evs), " "); n < 400 {
			assert.Equal(t, "overflow", evs[len(evs)-2].event, "%d of 400 deltas kept: the loss is reported", n)
		}
	}
}

// REF 11.2.6
// Every answer under /v1 has OpenAI's error shape, the routes it does
// not have and the methods a route does not take included: 401 without
// a key, 404 for an unknown path, 405 with Allow for another method.
func TestOpenAIErrorShapeOnEveryV1Path(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	for _, c := range []struct {
		method, path, key string
		status            int
		allow             string
	}{
		{http.MethodGet, "/v1/chat/completions", acmeKey, http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/v1/models", acmeKey, http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodDelete, "/v1/models/echo", acmeKey, http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/v1/embeddings", acmeKey, http.StatusNotFound, ""},
		{http.MethodPost, "/v1/completions", acmeKey, http.StatusNotFound, ""},
		{http.MethodGet, "/v1/embeddings", "", http.StatusUnauthorized, ""},
		{http.MethodGet, "/v1/chat/completions", "", http.StatusUnauthorized, ""},
		{http.MethodGet, "/v1", acmeKey, http.StatusNotFound, ""},
	} {
		r := ts.do(c.method, c.path, c.key, "")
		assert.Equal(t, c.status, r.status, "%s %s: %s", c.method, c.path, r.body)
		assert.Equal(t, c.allow, r.header.Get("Allow"), "%s %s", c.method, c.path)
		var body struct {
			Error map[string]any `json:"error"`
		}
		require.NoError(t, json.Unmarshal(r.body, &body), "%s %s: %s", c.method, c.path, r.body)
		for _, k := range []string{"message", "type", "param", "code"} {
			assert.Contains(t, body.Error, k, "%s %s: OpenAI's error has %q: %s", c.method, c.path, k, r.body)
		}
		assert.NotContains(t, body.Error, "kind", "%s %s", c.method, c.path)
	}
}

// REF 11.2.4
// The statuses a completion answers are the ones /openapi.json declares
// for it: a turn that fails is 500.
func TestOpenAPIDeclaresACompletionsFailure(t *testing.T) {
	t.Parallel()
	ts := newTestServerWithAgent(t, serve.Options{}, `  boom:
    tenant: acme
    card: {name: Boom}
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js}
      settings:
        graph:
          name: boom
          entry: s
          nodes: [{id: s, type: script, config: {source: "throw new Error('no')"}}]
          edges: [{from: s, to: __end__}]
`)
	r := ts.do(http.MethodPost, "/v1/chat/completions", acmeKey, `{"model":"boom","messages":[{"role":"user","content":"x"}]}`)
	require.Equal(t, http.StatusInternalServerError, r.status, "%s", r.body)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(ts.do(http.MethodGet, "/openapi.json", "", "").body, &doc))
	for _, status := range []string{"409", "500"} {
		assert.Contains(t, doc.Paths["/v1/chat/completions"]["post"].Responses, status)
	}
}

// REF 11.8.13
// What a refused request puts in the log is bounded: an anonymous client
// that sends a long path (or a body that echoes one) writes at most a
// short line, however long what it sent.
func TestRefusalLogLinesBounded(t *testing.T) {
	t.Parallel()
	var logged strings.Builder
	var mu sync.Mutex
	h := slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), nil)
	ts := newTestServer(t, serve.Options{Logger: slog.New(h)})
	long := "/" + strings.Repeat("a", 200_000)
	for _, key := range []string{"", acmeKey} {
		r := ts.do(http.MethodGet, long, key, "")
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusNotFound}, r.status)
	}
	r := ts.do(http.MethodPost, "/api/sessions", acmeKey, `{"agent":"`+strings.Repeat("b", 200_000)+`"}`)
	require.Equal(t, http.StatusNotFound, r.status)
	mu.Lock()
	defer mu.Unlock()
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 3, "%.300s", logged.String())
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), 4096, "a log line of %d bytes: %.200s", len(l), l)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// REF 11.1.9
// The sessions share holds against many opens at once: of 60 concurrent
// opens with a share of 5, at most 5 succeed.
func TestSessionsShareHoldsUnderConcurrentOpens(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{MaxSessionsPerTenant: 5})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(http.MethodPost, ts.http.URL+"/api/sessions", strings.NewReader(`{"agent":"echo"}`))
			if err != nil {
				return
			}
			req.Header.Set("Authorization", "Bearer "+acmeKey)
			resp, err := ts.http.Client().Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, 5, statuses[http.StatusCreated], "%v", statuses)
	assert.Equal(t, 55, statuses[http.StatusTooManyRequests], "%v", statuses)
	list := ts.do(http.MethodGet, "/api/sessions", acmeKey, "").json(t)["sessions"].([]any)
	assert.Len(t, list, 5)
}
