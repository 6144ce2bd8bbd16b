package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/serve"
)

// REF 11.4.1
// Drain refuses new sessions and turns and fails /readyz, but a running
// turn may still finish: its answer is taken, and Drain returns once it
// has.
func TestDrainLetsRunningTurnsFinish(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "asker")
	base := "/api/sessions/" + sid + "/turns/" + ts.startTurn(acmeKey, sid, "hi")
	s := ts.stream(context.Background(), base+"/events", acmeKey, "")
	pid := promptID(t, last(s.until(t, "prompt")))

	drained := make(chan error, 1)
	go func() { drained <- ts.srv.Drain(context.Background(), time.Minute) }()
	require.Eventually(t, ts.srv.Draining, time.Minute, time.Millisecond)
	r := ts.do("GET", "/readyz", "", "")
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, http.StatusOK, ts.do("GET", "/healthz", "", "").status)
	r = ts.do("POST", "/api/sessions/"+sid+"/turns", acmeKey, `{"text":"more"}`)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	r = ts.do("POST", "/api/sessions", acmeKey, `{"agent":"echo"}`)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	r = ts.do("POST", "/v1/chat/completions", acmeKey, `{"model":"echo","messages":[{"role":"user","content":"x"}]}`)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v while a turn runs", err)
	default:
	}

	r = ts.do("POST", base+"/prompts/"+pid, acmeKey, `{"text":"done"}`)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.NoError(t, <-drained)
	assert.Equal(t, "end", last(s.rest(t)).event)
	s.close()
	assert.Equal(t, "completed", ts.do("GET", base, acmeKey, "").json(t)["status"])
}

// REF 11.4.2
// A drain whose bound passes interrupts the running turns: each ends
// interrupted (cause host_shutdown), and its stream says so.
func TestDrainBoundInterrupts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	var streams []*sseStream
	var turns []string
	for range 3 {
		sid := ts.openSession(acmeKey, "asker")
		base := "/api/sessions/" + sid + "/turns/" + ts.startTurn(acmeKey, sid, "hi")
		s := ts.stream(context.Background(), base+"/events", acmeKey, "")
		s.until(t, "prompt")
		streams, turns = append(streams, s), append(turns, base)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the bound has passed already
	err := ts.srv.Drain(ctx, time.Minute)
	assert.True(t, fault.Is(err, fault.Interrupted), "%v", err)
	assert.Contains(t, err.Error(), "3 turns")
	assert.Zero(t, ts.srv.Running())
	for i, s := range streams {
		var end struct{ Status, Error string }
		require.NoError(t, json.Unmarshal([]byte(last(s.rest(t)).data), &end))
		s.close()
		assert.Equal(t, "interrupted", end.Status)
		assert.Contains(t, end.Error, "host_shutdown")
		assert.Equal(t, "interrupted", ts.do("GET", turns[i], acmeKey, "").json(t)["status"])
	}
}

func last[T any](s []T) T { return s[len(s)-1] }

// REF 11.4.1
// Completions racing a drain are either refused (503) or run to the end,
// and the drain waits for every one it admitted.
func TestDrainRacesStarts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	const n = 20
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			codes[i] = ts.do("POST", "/v1/chat/completions", acmeKey, `{"model":"echo","messages":[{"role":"user","content":"x"}]}`).status
		})
	}
	require.NoError(t, ts.srv.Drain(context.Background(), time.Minute))
	assert.Zero(t, ts.srv.Running(), "no admitted turn runs after the drain")
	wg.Wait()
	for i, c := range codes {
		assert.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, c, "request %d", i)
	}
}
