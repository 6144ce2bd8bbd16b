//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ctrl-C while the demo waits for an answer interrupts the turn: exit 1.
func TestCLICtrlCInterrupts(t *testing.T) {
	t.Parallel()
	c := start(t, "run", "--message", "hi", "--json")
	waitFor(t, c.stderr, "? What should I call you?")
	c.signal(t)
	code := c.wait(t)
	assert.Equal(t, exitFailed, code, c.stderr.String())
	assert.Contains(t, c.stderr.String(), "interrupting the turn (Ctrl-C again to cancel it)")
	var got jsonResult
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &got), c.stdout.String())
	assert.Equal(t, "interrupted", got.Status)
	require.NotNil(t, got.Error)
	assert.Equal(t, "interrupted", got.Error.Kind)
}

// A turn that does not stop at an interrupt is canceled by a second
// Ctrl-C.
func TestCLISecondCtrlCCancels(t *testing.T) {
	t.Parallel()
	c := start(t, "run", "testdata/spin.yaml", "--agent", "spinner", "--message", "hi")
	waitFor(t, c.stdout, "spinning")
	c.signal(t)
	waitFor(t, c.stderr, "interrupting the turn")
	c.signal(t)
	code := c.wait(t)
	assert.Equal(t, exitFailed, code, c.stderr.String())
	assert.Contains(t, c.stderr.String(), "corral: canceling the turn")
	assert.Contains(t, c.stderr.String(), "-- canceled (run-")
}

// SIGTERM (a supervisor stopping the command) interrupts and cancels the
// turn at once, even a turn that does not stop at an interrupt, and the
// outcome is still printed: the status line, exit 1.
func TestCLISIGTERMCancels(t *testing.T) {
	t.Parallel()
	c := start(t, "run", "testdata/spin.yaml", "--agent", "spinner", "--message", "hi")
	waitFor(t, c.stdout, "spinning")
	c.send(t, syscall.SIGTERM)
	code := c.wait(t)
	assert.Equal(t, exitFailed, code, c.stderr.String())
	assert.Contains(t, c.stderr.String(), "corral: terminated: interrupting and canceling the turn")
	assert.Contains(t, c.stderr.String(), "-- canceled (run-")
}

// With --json, SIGTERM still prints the one JSON object.
func TestCLISIGTERMPrintsJSON(t *testing.T) {
	t.Parallel()
	c := start(t, "run", "--message", "hi", "--json")
	waitFor(t, c.stderr, "? What should I call you?")
	c.send(t, syscall.SIGTERM)
	code := c.wait(t)
	assert.Equal(t, exitFailed, code, c.stderr.String())
	var got jsonResult
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &got), c.stdout.String())
	assert.Contains(t, []string{"canceled", "interrupted"}, got.Status)
	require.NotNil(t, got.Error)
	assert.Regexp(t, `^run-[0-9a-f]{16}$`, got.RunID)
}

// stallServer streams the first words of a reply and then holds the
// stream open until the client goes away (gone is closed then) or the
// test ends: a model call that only an interrupt can end.
type stallServer struct {
	gone    chan struct{}
	release chan struct{}
}

func (s *stallServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, chunk("chatcmpl-s", `{"index":0,"delta":{"role":"assistant","content":"The first words"},"finish_reason":null}`, "null"))
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
		close(s.gone)
	case <-s.release:
	}
}

// The first Ctrl-C stops a model call that is streaming: the request is
// abandoned rather than waited for, what streamed stays on stdout, and
// the turn ends interrupted.
func TestCLIInterruptStopsModelCall(t *testing.T) {
	t.Parallel()
	srv := &stallServer{gone: make(chan struct{}), release: make(chan struct{})}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer close(srv.release)
	c := startWithEnv(t, chatEnv(ts.URL), "run", openaiChat, "--message", "hi")
	waitFor(t, c.stdout, "The first words")
	c.signal(t)
	code := c.wait(t) // the server never ends the stream: only the interrupt ends the turn
	assert.Equal(t, exitFailed, code, c.stderr.String())
	assert.Contains(t, c.stderr.String(), "-- interrupted (run-")
	assert.NotContains(t, c.stderr.String(), "canceling the turn", "one Ctrl-C was enough")
	assert.Equal(t, "The first words\n", c.stdout.String(), "what streamed is kept")
	select {
	case <-srv.gone:
	case <-time.After(waitLimit(t)):
		t.Fatal("the model request was not abandoned")
	}
}
