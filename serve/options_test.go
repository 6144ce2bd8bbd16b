package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve"
)

// REF 11.1.4
// Options.Metrics is served at /metrics without a key; Options.Middleware
// wraps every route, the refused ones included.
func TestOptionsMetricsAndMiddleware(t *testing.T) {
	t.Parallel()
	var seen atomic.Int64
	ts := newTestServer(t, serve.Options{
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "turns 0\n") }),
		Middleware: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen.Add(1)
				h.ServeHTTP(w, r)
			})
		},
	})
	r := ts.do("GET", "/metrics", "", "")
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "turns 0\n", string(r.body))
	assert.Equal(t, http.StatusUnauthorized, ts.do("GET", "/v1/models", "", "").status)
	assert.Equal(t, http.StatusOK, ts.do("GET", "/v1/models", acmeKey, "").status)
	assert.EqualValues(t, 3, seen.Load())

	plain := newTestServer(t, serve.Options{})
	assert.Equal(t, http.StatusUnauthorized, plain.do("GET", "/metrics", "", "").status, "no metrics handler: an ordinary route")
}

// REF 11.3.5 REF 11.3.6
// A steer that cannot be queued says why: too large 413, a full queue
// 429; a body over the bound is 400.
func TestSteerRefusals(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{MaxBodyBytes: 64 << 10})
	sid := ts.openSession(acmeKey, "asker")
	base := "/api/sessions/" + sid + "/turns/" + ts.startTurn(acmeKey, sid, "hi")
	s := ts.stream(context.Background(), base+"/events", acmeKey, "")
	s.until(t, "prompt")
	s.close()

	r := ts.do("POST", base+"/steer", acmeKey, fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 33<<10)))
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status, "%s", r.body)
	for i := range 8 {
		r = ts.do("POST", base+"/steer", acmeKey, fmt.Sprintf(`{"text":"s%d"}`, i))
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	}
	r = ts.do("POST", base+"/steer", acmeKey, `{"text":"one too many"}`)
	assert.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	assert.Equal(t, "rate_limit", r.json(t)["error"].(map[string]any)["kind"])
	r = ts.do("POST", base+"/steer", acmeKey, fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 65<<10)))
	assert.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	assert.Contains(t, r.json(t)["error"].(map[string]any)["message"], "larger than 65536 bytes")
	assert.EqualValues(t, 8, ts.do("GET", base, acmeKey, "").json(t)["pending_steer"])
}

// REF 11.2.2
// A client that goes away during a streamed completion interrupts its
// turn: the spinner, which stops only at an interrupt, settles.
func TestChatClientGoneInterrupts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.http.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"spinner","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+acmeKey)
	resp, err := ts.http.Client().Do(req)
	require.NoError(t, err)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "spinning") {
	}
	require.Equal(t, 1, ts.srv.Running(), "the turn spins")
	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool { return ts.srv.Running() == 0 }, time.Minute, time.Millisecond,
		"the turn of the client that went away was interrupted")
}
