package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/serve"
)

// The keys of testdata/keys.yaml.
const (
	acmeKey  = "acme-key"
	acmeKey2 = "acme-key-2"
	bravoKey = "bravo-key"
	meterKey = "meter-key"
)

// copyTestdata copies testdata's deployment and keys into a fresh
// directory (the deployment's store lives beside it) and returns the
// document's path.
func copyTestdata(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"deploy.yaml", "keys.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	return filepath.Join(dir, "deploy.yaml")
}

// buildRuntime builds the document at path, its turns recorded by rec
// when it is not nil.
func buildRuntime(t testing.TB, path string, rec ...*replay.Recorder) *runtime.Runtime {
	t.Helper()
	doc, err := deploy.ParseFile(path)
	require.NoError(t, err)
	b := builtin.NewBuilder()
	if len(rec) > 0 {
		require.NoError(t, b.WithHostFactory(rec[0].Decorate))
	}
	rt, err := b.Build(context.Background(), doc)
	require.NoError(t, err)
	return rt
}

// testServer serves testdata's deployment over loopback.
type testServer struct {
	t    testing.TB
	rt   *runtime.Runtime
	srv  *serve.Server
	http *httptest.Server
	path string // the deployment document
}

func newTestServer(t testing.TB, opts serve.Options) *testServer {
	t.Helper()
	return newTestServerAt(t, copyTestdata(t), opts)
}

// newTestServerAt serves the deployment at path with the keys.yaml beside
// it.
func newTestServerAt(t testing.TB, path string, opts serve.Options) *testServer {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var rt *runtime.Runtime
	if rec, ok := opts.Recordings.(*replay.Recorder); ok {
		rt = buildRuntime(t, path, rec)
	} else {
		rt = buildRuntime(t, path)
	}
	keys, err := serve.LoadKeys(filepath.Join(filepath.Dir(path), "keys.yaml"))
	require.NoError(t, err)
	srv, err := serve.New(rt, keys, opts)
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	ts := &testServer{t: t, rt: rt, srv: srv, http: hs, path: path}
	t.Cleanup(func() {
		// Close interrupts the running turns first, so that handlers
		// waiting for one return and the HTTP server can close.
		hs.CloseClientConnections()
		require.NoError(t, srv.Close())
		hs.Close()
		require.NoError(t, rt.Close())
	})
	return ts
}

// response is a finished request.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(r.body, &v), "body: %s", r.body)
	return v
}

// do sends a request with key (none when "") and reads the answer.
func (ts *testServer) do(method, path, key, body string) response {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
	require.NoError(ts.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := ts.http.Client().Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(ts.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	id, event, data string
}

// sseStream reads server-sent events from a response body.
type sseStream struct {
	resp *http.Response
	r    *bufio.Reader
}

// stream opens a turn's event stream, resuming after lastID when it is
// not "".
func (ts *testServer) stream(ctx context.Context, path, key, lastID string) *sseStream {
	ts.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.http.URL+path, nil)
	require.NoError(ts.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := ts.http.Client().Do(req)
	require.NoError(ts.t, err)
	require.Equal(ts.t, http.StatusOK, resp.StatusCode)
	require.Equal(ts.t, "text/event-stream", resp.Header.Get("Content-Type"))
	return &sseStream{resp: resp, r: bufio.NewReader(resp.Body)}
}

// next reads the next event; io.EOF at the stream's end.
func (s *sseStream) next() (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.data != "" || ev.event != "" {
				return ev, nil
			}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
}

// until reads events up to and including the first of type typ.
func (s *sseStream) until(t testing.TB, typ string) []sseEvent {
	t.Helper()
	var out []sseEvent
	for {
		ev, err := s.next()
		require.NoError(t, err, "the stream ended before a %q event; read %v", typ, out)
		out = append(out, ev)
		if ev.event == typ {
			return out
		}
	}
}

// rest reads every event to the stream's end.
func (s *sseStream) rest(t testing.TB) []sseEvent {
	t.Helper()
	var out []sseEvent
	for {
		ev, err := s.next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, ev)
	}
}

func (s *sseStream) close() { _ = s.resp.Body.Close() }

// text joins the text of the delta events.
func deltaText(t testing.TB, evs []sseEvent) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range evs {
		if ev.event != "delta" {
			continue
		}
		var d struct {
			Part *struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"part"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &d))
		if d.Part != nil && d.Part.Type == "text" {
			b.WriteString(d.Part.Text)
		}
	}
	return b.String()
}
