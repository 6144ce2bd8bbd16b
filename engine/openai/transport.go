package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
)

// maxLineEcho caps how much of an offending stream line an error quotes.
const maxLineEcho = 512

// transport is the SDK's HTTP client: it adds the configured headers and
// the key of auth scheme "header", and lets the attempt that made a
// request see the response's header and watch its body.
type transport struct {
	client *http.Client
	header http.Header // extra headers, OpenAI-Project, the auth header
}

type attemptKey struct{}

// attemptState is what one attempt learns about its response.
type attemptState struct {
	mu     sync.Mutex
	header http.Header
	body   *lineWatcher
}

func withAttempt(ctx context.Context, a *attemptState) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

func (a *attemptState) responseHeader() http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.header
}

func (a *attemptState) watcher() *lineWatcher {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.body
}

// Do sends req with the extra headers and the extension fields, and records the response for the
// attempt on req's context.
func (t *transport) Do(req *http.Request) (*http.Response, error) {
	for k, vs := range t.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if err := mergeExtraBody(req); err != nil {
		return nil, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return resp, err
	}
	if a, ok := req.Context().Value(attemptKey{}).(*attemptState); ok {
		w := &lineWatcher{rc: resp.Body}
		resp.Body = w
		a.mu.Lock()
		a.header, a.body = resp.Header.Clone(), w
		a.mu.Unlock()
	}
	return resp, nil
}

// lineWatcher passes a response body through and remembers the line being
// read: at the end of the body, a line without its newline is a stream cut
// mid-line, and a [DONE] line tells a finished stream from a cut one.
type lineWatcher struct {
	rc io.ReadCloser

	mu      sync.Mutex
	partial []byte // the bytes after the last newline, capped
	long    bool   // the partial line is longer than the cap
	done    bool   // a "data: [DONE]" line went by
}

func (w *lineWatcher) Read(p []byte) (int, error) {
	n, err := w.rc.Read(p)
	w.observe(p[:n])
	return n, err
}

func (w *lineWatcher) Close() error { return w.rc.Close() }

func (w *lineWatcher) observe(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.add(b)
			return
		}
		w.add(b[:i])
		if isDone(w.partial) && !w.long {
			w.done = true
		}
		w.partial, w.long = w.partial[:0], false
		b = b[i+1:]
	}
}

func (w *lineWatcher) add(b []byte) {
	room := maxLineEcho - len(w.partial)
	if len(b) > room {
		b, w.long = b[:room], true
	}
	w.partial = append(w.partial, b...)
}

// state returns the unfinished line at the point the body was read to,
// and whether a [DONE] line was seen (a [DONE] without its newline counts).
func (w *lineWatcher) state() (partial string, done bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if isDone(w.partial) {
		return "", true
	}
	p := string(bytes.TrimSpace(w.partial))
	if w.long {
		p += "…"
	}
	return p, w.done
}

func isDone(line []byte) bool {
	line = bytes.TrimSpace(line)
	rest, ok := bytes.CutPrefix(line, []byte("data:"))
	return ok && string(bytes.TrimSpace(rest)) == "[DONE]"
}
