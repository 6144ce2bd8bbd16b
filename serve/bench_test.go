package serve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/serve"
)

// libraryTurn runs the echo agent's turn as a library user would: an
// ephemeral session, one turn, the session removed.
func libraryTurn(b *testing.B, ts *testServer, i int) {
	ctx := context.Background()
	key := session.Key{AgentID: "echo", ContextID: fmt.Sprintf("bench-%d", i)}
	lease, err := ts.rt.Sessions().Open(ctx, key)
	if err != nil {
		b.Fatal(err)
	}
	turn, err := lease.Session().StartWithConfig(ctx, agent.Request{Message: message.NewTextMessage(message.RoleUser, "hello there")},
		session.StartConfig{Ephemeral: true})
	if err != nil {
		b.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Status != agent.StatusCompleted {
		b.Fatalf("turn: %v %v", res, err)
	}
	_ = lease.Close()
	if err := ts.rt.Sessions().DeleteSession(ctx, key); err != nil {
		b.Fatal(err)
	}
}

// chatTurn runs the same turn as a non-streamed chat completion over
// loopback HTTP.
func chatTurn(b *testing.B, ts *testServer, client *http.Client) {
	req, err := http.NewRequest(http.MethodPost, ts.http.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"echo","messages":[{"role":"user","content":"hello there"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+acmeKey)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkChatCompletion runs a one-node agent's turn through the
// library and as a chat completion over loopback, alternately in the same
// loop, and reports the ratio of their times (serve/library); see
// docs/serve.md for the command.
func BenchmarkChatCompletion(b *testing.B) {
	ts := newTestServer(b, serve.Options{})
	client := ts.http.Client()
	var lib, srv time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		libraryTurn(b, ts, i)
		t1 := time.Now()
		chatTurn(b, ts, client)
		srv += time.Since(t1)
		lib += t1.Sub(t0)
		i++
	}
	b.ReportMetric(float64(lib.Nanoseconds())/float64(i), "library-ns/turn")
	b.ReportMetric(float64(srv.Nanoseconds())/float64(i), "serve-ns/turn")
	b.ReportMetric(float64(srv)/float64(lib), "serve/library")
}
