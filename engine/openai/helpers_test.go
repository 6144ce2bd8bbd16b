package openai

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fixture returns the bytes of testdata/name.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// seen is one request the fake server received.
type seen struct {
	Path   string
	Query  string
	Header http.Header
	Body   map[string]any
}

// wire is a fake OpenAI-wire server: each request is answered by the next
// handler of its script (the last one repeats), and every request is
// recorded.
type wire struct {
	*httptest.Server
	mu       sync.Mutex
	requests []seen
	script   []http.HandlerFunc
}

func newWire(t testing.TB, script ...http.HandlerFunc) *wire {
	t.Helper()
	w := &wire{script: script}
	w.Server = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.Close)
	return w
}

func (w *wire) serve(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	w.mu.Lock()
	n := len(w.requests)
	w.requests = append(w.requests, seen{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: m})
	h := w.script[min(n, len(w.script)-1)]
	w.mu.Unlock()
	h(rw, r)
}

func (w *wire) seen() []seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]seen(nil), w.requests...)
}

// replyJSON answers with status and a JSON fixture.
func replyJSON(t testing.TB, status int, name string, header ...string) http.HandlerFunc {
	body := fixture(t, name)
	return func(rw http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			rw.Header().Set(header[i], header[i+1])
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(status)
		_, _ = rw.Write(body)
	}
}

// replySSE answers with an SSE fixture, flushed line by line.
func replySSE(t testing.TB, name string) http.HandlerFunc {
	body := fixture(t, name)
	return func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		rw.WriteHeader(http.StatusOK)
		_, _ = rw.Write(body)
		rw.(http.Flusher).Flush()
	}
}

// newProvider returns a provider for the server at url with key "sk-test"
// and model "gpt-4o-mini", changed by mods.
func newProvider(t testing.TB, url string, mods ...func(*Settings)) *Provider {
	t.Helper()
	zero := 0
	s := Settings{BaseURL: url + "/v1", APIKey: "sk-test", Model: "gpt-4o-mini", Retries: &zero, RetryBackoff: "1ms"}
	for _, m := range mods {
		m(&s)
	}
	p, err := New(s)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func retries(n int) func(*Settings) { return func(s *Settings) { s.Retries = &n } }
