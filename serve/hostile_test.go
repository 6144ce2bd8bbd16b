package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve"
)

// REF 11.1.4
// REF 11.8.5
// Only one Authorization header of scheme Bearer (any case) with a
// tenant's key passes; every odd form is 401.
func TestAuthorizationForms(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	for _, c := range []struct {
		name    string
		headers []string
		status  int
	}{
		{"none", nil, http.StatusUnauthorized},
		{"empty", []string{""}, http.StatusUnauthorized},
		{"scheme alone", []string{"Bearer"}, http.StatusUnauthorized},
		{"scheme and space", []string{"Bearer "}, http.StatusUnauthorized},
		{"basic", []string{"Basic " + acmeKey}, http.StatusUnauthorized},
		{"no scheme", []string{acmeKey}, http.StatusUnauthorized},
		{"wrong key", []string{"Bearer " + acmeKey + "x"}, http.StatusUnauthorized},
		{"key prefix", []string{"Bearer acme"}, http.StatusUnauthorized},
		{"key and more", []string{"Bearer " + acmeKey + " " + bravoKey}, http.StatusUnauthorized},
		{"two headers", []string{"Bearer " + acmeKey, "Bearer " + acmeKey}, http.StatusUnauthorized},
		{"another tenant's and ours", []string{"Bearer " + bravoKey, "Bearer " + acmeKey}, http.StatusUnauthorized},
		{"a hash as the key", []string{"Bearer sha256:afacab3575137afa4e00d9cbcafcb14c9ae25f779d964eb0ea5b2c4eb5dfd163"}, http.StatusUnauthorized},
		{"bearer in lower case", []string{"bearer " + acmeKey}, http.StatusOK},
		{"two spaces", []string{"Bearer  " + acmeKey}, http.StatusOK},
	} {
		req, err := http.NewRequest(http.MethodGet, ts.http.URL+"/api/agents", nil)
		require.NoError(t, err)
		for _, h := range c.headers {
			req.Header.Add("Authorization", h)
		}
		resp, err := ts.http.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, c.status, resp.StatusCode, c.name)
	}
}

// REF 11.5.1
// REF 11.8.6
// A body nested deeper than the JSON decoder goes, and a context id that
// walks paths, are 400.
func TestHostileBodies(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	deep := `{"text":"x","inputs":{"a":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}}`
	sid := ts.openSession(acmeKey, "echo")
	r := ts.do(http.MethodPost, "/api/sessions/"+sid+"/turns", acmeKey, deep)
	assert.Equal(t, http.StatusBadRequest, r.status, "%.200s", r.body)
	r = ts.do(http.MethodPost, "/v1/chat/completions", acmeKey, `{"model":"echo","messages":`+strings.Repeat("[", 100000)+`}`)
	assert.Equal(t, http.StatusBadRequest, r.status, "%.200s", r.body)
	// A context id is opaque: the store names a session by a hash of its
	// key, so path syntax in it reaches no path.
	for _, id := range []string{"../../etc/passwd", "a/b", ".."} {
		r = ts.do(http.MethodPost, "/api/sessions", acmeKey, fmt.Sprintf(`{"agent":"echo","context_id":%q}`, id))
		require.Equal(t, http.StatusCreated, r.status, "context id %q: %s", id, r.body)
		assert.Equal(t, id, r.json(t)["context_id"])
		ts.runEcho(acmeKey, r.json(t)["id"].(string), "hi")
	}
	_, err := os.Stat(filepath.Join(filepath.Dir(ts.path), "..", "etc"))
	assert.True(t, os.IsNotExist(err), "nothing was written beside the deployment's directory")
	for _, path := range []string{"/api/sessions/..%2f..%2fx", "/api/sessions/%2e%2e/turns", "/api/sessions/" + sid + "/turns/..%2f" + sid} {
		r = ts.do(http.MethodGet, path, acmeKey, "")
		assert.Equal(t, http.StatusNotFound, r.status, "%s: %s", path, r.body)
	}
}

// REF 11.8.4
// A client that opens a turn's stream and never reads it loses the stream
// once a write waits past Options.StreamWriteTimeout: it does not hold
// the handler (the one stream the turn allows is free again).
func TestStreamClientThatNeverReads(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{MaxStreamsPerTurn: 1, StreamWriteTimeout: 50 * time.Millisecond, MaxBodyBytes: 16 << 20})
	// A listener whose connections buffer little, so that a client that
	// does not read makes the server's writes wait.
	hs := httptest.NewUnstartedServer(ts.srv)
	hs.Listener = smallBuffers{hs.Listener}
	hs.Start()
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	sid := ts.openSession(acmeKey, "echo")
	word := strings.Repeat("w", 12000)
	// About 1 MB of deltas, and as much in the answer (a value may have 1 MiB).
	tid := ts.startTurn(acmeKey, sid, strings.TrimSpace(strings.Repeat(word+" ", 80)))
	base := "/api/sessions/" + sid + "/turns/" + tid
	r := ts.do(http.MethodGet, base+"/wait", acmeKey, "")
	require.Equal(t, "completed", r.json(t)["status"], "%s", r.body[len(r.body)-300:])

	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
	_, err = fmt.Fprintf(conn, "GET %s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", base, acmeKey)
	require.NoError(t, err)
	status, err := bufio.NewReaderSize(conn, 64).ReadString('\n') // the stream began; no more is read
	require.NoError(t, err)
	require.Contains(t, status, "200")
	// The stream holds the turn's one place until its write times out.
	for i := 0; ; i++ {
		r := ts.do(http.MethodGet, base+"/events?after=1000000000", acmeKey, "")
		if r.status == http.StatusOK {
			break
		}
		require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
		require.Less(t, i, 3000, "the stream of a client that never reads was never dropped")
		time.Sleep(10 * time.Millisecond)
	}
}

// smallBuffers accepts connections with small socket buffers.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// REF 11.8.7
// A client that sends a body slower than Options.BodyReadTimeout is
// refused (400) instead of holding its handler; a body sent in time and a
// stream after it are not cut by the bound.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{BodyReadTimeout: 200 * time.Millisecond})
	sid := ts.openSession(acmeKey, "asker")
	conn, err := net.Dial("tcp", ts.http.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /api/sessions/%s/turns HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{\"text\":", sid, acmeKey)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute))) // a failure, not a hang, without the bound
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err, "the server answered the stalled body")
	assert.Contains(t, status, "400")

	// A stream that outlives the bound: a turn waiting for its answer.
	tid := ts.startTurn(acmeKey, sid, "go")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := ts.stream(ctx, "/api/sessions/"+sid+"/turns/"+tid+"/events", acmeKey, "")
	defer s.close()
	evs := s.until(t, "prompt")
	var prompt struct {
		PromptID string `json:"prompt_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-1].data), &prompt))
	time.Sleep(400 * time.Millisecond) // past the bound: the stream must not be cut
	r := ts.do(http.MethodPost, "/api/sessions/"+sid+"/turns/"+tid+"/prompts/"+prompt.PromptID, acmeKey, `{"text":"yes"}`)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	end := s.until(t, "end")
	assert.Contains(t, end[len(end)-1].data, "completed")
}
