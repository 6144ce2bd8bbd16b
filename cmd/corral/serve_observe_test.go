//go:build unix

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var metricsListening = regexp.MustCompile(`msg="metrics listening" addr=(http://\S+)`)

// scrape reads the metrics and returns the value of the series whose line
// starts with series ("" and false when there is none).
func scrape(t *testing.T, url, series string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			require.NoError(t, err, line)
			return v, true
		}
	}
	return 0, false
}

// REF 11.6.1
// REF 11.6.2
// REF 11.7.1
// corral serve --metrics-addr serves per-tenant turn counters after a
// turn, counts a quota refusal once, keeps /metrics off the main
// listener, and records turns by default.
func TestServeMetricsAndRecordings(t *testing.T) {
	t.Parallel()
	doc := serveFixture(t)
	c, base := startServe(t, doc, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
	m := metricsListening.FindStringSubmatch(c.stderr.String())
	require.NotNil(t, m, c.stderr.String())
	metrics := m[1]

	code, body := request(t, http.MethodPost, base+"/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, code, body)
	started, ok := scrape(t, metrics, `corral_turns_started_total{agent="echo",tenant="acme"}`)
	assert.True(t, ok && started == 1, "one turn of acme's echo started: %v", started)
	requests, ok := scrape(t, metrics, `corral_http_requests_total{code="200",route="POST /v1/chat/completions"}`)
	assert.True(t, ok && requests == 1, "one request counted by its route: %v", requests)

	code, _ = request(t, http.MethodGet, base+"/metrics", "")
	assert.Equal(t, http.StatusNotFound, code, "the main listener has no /metrics")

	chat := `{"model":"metered","messages":[{"role":"user","content":"hi"}]}`
	meter := func() int {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(chat))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer meter-key")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	meter() // spends the minute's tokens
	series := `corral_quota_rejections_total{quota="model_tokens_per_minute",tenant="meter"}`
	before, _ := scrape(t, metrics, series)
	require.Equal(t, http.StatusTooManyRequests, meter())
	after, ok := scrape(t, metrics, series)
	require.True(t, ok, "the quota refusal is a series")
	assert.Equal(t, before+1, after, "the refusal counted once")

	sid := post(t, base+"/api/sessions", "acme-key", `{"agent":"echo"}`)["id"].(string)
	tid := post(t, base+"/api/sessions/"+sid+"/turns", "acme-key", `{"text":"record me"}`)["id"].(string)
	turn := base + "/api/sessions/" + sid + "/turns/" + tid
	code, body = request(t, http.MethodGet, turn+"/wait", "")
	require.Equal(t, http.StatusOK, code, body)
	code, body = request(t, http.MethodGet, turn+"/recording", "")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"run_id":"`+tid+`"`)
	assert.NotContains(t, body, "acme-key")
}

// REF 11.6.3
// With OTEL_EXPORTER_OTLP_ENDPOINT set, corral serve exports the spans of
// its requests and turns over OTLP/HTTP, flushed when it exits on
// SIGTERM.
func TestServeExportsTracesFromEnv(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var posts []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, r.URL.Path+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	env := append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_SERVICE_NAME=serve-test")
	c := startWithEnv(t, env, "serve", serveFixture(t), "--addr", "127.0.0.1:0")
	waitFor(t, c.stderr, "msg=listening")
	m := listening.FindStringSubmatch(c.stderr.String())
	require.NotNil(t, m, c.stderr.String())
	code, body := request(t, http.MethodPost, m[1]+"/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, code, body)
	c.send(t, syscall.SIGTERM)
	require.Equal(t, 0, c.wait(t), c.stderr.String())

	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(posts, "\n")
	assert.Contains(t, all, "/v1/traces ", "spans were exported to the OTLP endpoint")
	assert.Contains(t, all, "POST /v1/chat/completions", "the request's span")
	assert.Contains(t, all, "invoke_agent", "the turn's span")
	assert.Contains(t, all, "serve-test", "the service name of OTEL_SERVICE_NAME")
}
