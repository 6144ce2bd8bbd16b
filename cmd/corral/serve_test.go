//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// serveFixture copies serve's test deployment and keys into a fresh
// directory and returns the document's path.
func serveFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"deploy.yaml", "keys.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "serve", "testdata", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	return filepath.Join(dir, "deploy.yaml")
}

var listening = regexp.MustCompile(`msg=listening addr=(http://\S+)`)

// startServe runs corral serve on a free loopback port and returns its
// base URL.
func startServe(t *testing.T, args ...string) (*child, string) {
	t.Helper()
	c := start(t, append([]string{"serve"}, args...)...)
	waitFor(t, c.stderr, "msg=listening")
	m := listening.FindStringSubmatch(c.stderr.String())
	require.NotNil(t, m, c.stderr.String())
	return c, m[1]
}

// request sends a request with acme's key and returns the status and body.
func request(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer acme-key")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

func post(t *testing.T, url, key, body string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", v)
	return v
}

// REF 11.4.4
// SIGTERM while 20 turns run: serve refuses new work and lets the turns
// finish (the ten that get their answer do); a second signal interrupts
// the rest, and every stream reports its turn's end. The store is whole:
// every session opens again and runs a turn.
func TestServeSIGTERMDrainsRunningTurns(t *testing.T) {
	t.Parallel()
	doc := serveFixture(t)
	c, base := startServe(t, doc, "--addr", "127.0.0.1:0", "--drain", "10m", "--grace", "1m")
	const n = 20
	type running struct {
		contextID, base, prompt string
		body                    io.ReadCloser
		events                  *bufio.Reader
	}
	turns := make([]running, n)
	for i := range turns {
		s := post(t, base+"/api/sessions", "acme-key", `{"agent":"asker"}`)
		sid := s["id"].(string)
		tr := post(t, base+"/api/sessions/"+sid+"/turns", "acme-key", `{"text":"hi"}`)
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/sessions/%s/turns/%s/events", base, sid, tr["id"]), nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer acme-key")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		turns[i] = running{contextID: s["context_id"].(string), base: fmt.Sprintf("%s/api/sessions/%s/turns/%s", base, sid, tr["id"]),
			body: resp.Body, events: bufio.NewReader(resp.Body)}
		for { // up to the turn's question: it is running
			line, err := turns[i].events.ReadString('\n')
			require.NoError(t, err)
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"prompt_id"`) {
				var p session.PromptRequested
				require.NoError(t, json.Unmarshal([]byte(line[6:]), &p))
				turns[i].prompt = p.PromptID
				break
			}
		}
	}
	c.send(t, syscall.SIGTERM)
	waitFor(t, c.stderr, "msg=draining")

	// While it drains, new work is refused and running turns may finish:
	// half of them get their answer.
	code, _ := request(t, http.MethodPost, base+"/api/sessions", `{"agent":"echo"}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	code, _ = request(t, http.MethodGet, base+"/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	for _, tr := range turns[:n/2] {
		code, body := request(t, http.MethodPost, tr.base+"/prompts/"+tr.prompt, `{"text":"bye"}`)
		require.Equal(t, http.StatusAccepted, code, body)
	}

	ends := make([]string, n)
	readEnds := func(from, to int) {
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			wg.Go(func() {
				defer turns[i].body.Close()
				var last string
				for {
					line, err := turns[i].events.ReadString('\n')
					if err != nil {
						ends[i] = last
						return
					}
					if strings.HasPrefix(line, "data: ") {
						last = line[6:]
					}
				}
			})
		}
		wg.Wait()
	}
	status := func(i int) agent.Status {
		var e session.RunEndPayload
		require.NoError(t, json.Unmarshal([]byte(ends[i]), &e), "turn %d's stream ends with its end event: %q", i, ends[i])
		return e.Status
	}
	// The answered turns finish while the server drains.
	readEnds(0, n/2)
	for i := range n / 2 {
		assert.Equal(t, agent.StatusCompleted, status(i), "turn %d got its answer during the drain and finished", i)
	}
	// A second signal interrupts the others at once.
	c.send(t, syscall.SIGTERM)
	readEnds(n/2, n)
	assert.Equal(t, exitOK, c.wait(t), c.stderr.String())
	for i := n / 2; i < n; i++ {
		assert.Equal(t, agent.StatusInterrupted, status(i), "turn %d", i)
		assert.Contains(t, ends[i], "host_shutdown")
	}
	assert.Contains(t, c.stderr.String(), "second signal: interrupting the running turns now")

	// The store is whole: each session opens and runs a new turn.
	parsed, err := deploy.ParseFile(doc)
	require.NoError(t, err)
	app, err := build(context.Background(), parsed)
	require.NoError(t, err)
	defer app.Close()
	for _, tr := range turns {
		lease, err := app.Sessions().Open(context.Background(), session.Key{AgentID: "asker", ContextID: tr.contextID})
		require.NoError(t, err)
		_, _, err = lease.Session().Resumable(context.Background())
		require.NoError(t, err)
		turn, err := lease.Session().StartWithConfig(context.Background(),
			agent.Request{Message: message.NewTextMessage(message.RoleUser, "again")},
			session.StartConfig{AskUser: func(context.Context, agent.UserPrompt) (agent.UserReply, error) {
				return agent.UserReply{Parts: []message.Part{message.TextPart("ok")}}, nil
			}})
		require.NoError(t, err)
		res, err := turn.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
		require.NoError(t, lease.Close())
	}
}

// REF 11.1.6
// serve refuses a keys file that names a tenant the document does not
// declare, and a missing keys file; hash-key prints a key's stored form.
func TestServeBadInput(t *testing.T) {
	t.Parallel()
	doc := serveFixture(t)
	keys := filepath.Join(filepath.Dir(doc), "keys.yaml")
	require.NoError(t, os.WriteFile(keys, []byte("tenants:\n  ghost: {keys: [sha256:"+strings.Repeat("ab", 32)+"]}\n"), 0o600))
	_, stderr, code := runCorral(t, "serve", doc, "--addr", "127.0.0.1:0")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, `tenant "ghost" is not declared`)
	_, stderr, code = runCorral(t, "serve", doc, "--keys", filepath.Join(t.TempDir(), "none.yaml"))
	assert.Equal(t, exitBadInput, code, stderr)
	_, stderr, code = runCorral(t, "serve", "--addr", "127.0.0.1:0")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "--keys is required")

	c := start(t, "serve", "hash-key")
	c.write(t, "acme-key")
	require.NoError(t, c.stdin.Close())
	assert.Equal(t, exitOK, c.wait(t))
	assert.Equal(t, "sha256:afacab3575137afa4e00d9cbcafcb14c9ae25f779d964eb0ea5b2c4eb5dfd163\n", c.stdout.String())
}
