package serve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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
func libraryTurn(b *testing.B, ts *testServer, agentID string, i int) {
	ctx := context.Background()
	key := session.Key{AgentID: agentID, ContextID: fmt.Sprintf("bench-%d", i)}
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
func chatTurn(b *testing.B, ts *testServer, agentID string, client *http.Client) {
	postChat(b, ts, `{"model":"`+agentID+`","messages":[{"role":"user","content":"hello there"}]}`, client, false)
}

// postChat posts body to the chat completions endpoint as acme and fails
// b unless the answer is 200; it returns the answer's body when keep is
// set, and otherwise reads it to the end without keeping it.
func postChat(b *testing.B, ts *testServer, body string, client *http.Client, keep bool) []byte {
	req, err := http.NewRequest(http.MethodPost, ts.http.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+acmeKey)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		b.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	if !keep {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	data, _ := io.ReadAll(resp.Body)
	return data
}

// helloTurn is the floor of any HTTP answer: the same request to a bare
// net/http handler that reads the body and answers a constant, over
// loopback with a kept-alive client.
func helloTurn(b *testing.B, url string, client *http.Client) {
	req, err := http.NewRequest(http.MethodPost, url,
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
}

// median returns the middle of ds, which it sorts.
func median(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds())
}

// BenchmarkChatCompletion runs a one-node agent's turn (testdata's
// "echo", a script node) through the library, as a chat completion over
// loopback, and a bare net/http answer over loopback (the floor of any
// HTTP server), alternately in the same loop, and reports the ratio of
// their times: serve/library (of the means, the figure quoted),
// serve/library-median (of the medians, which a busy machine disturbs
// less) and floor/library, the ratio an HTTP server that cost nothing
// besides the round trip would have; see docs/serve.md for the command.
func BenchmarkChatCompletion(b *testing.B) {
	benchmarkPair(b, newTestServer(b, serve.Options{}), "echo")
}

// BenchmarkChatCompletionInference is BenchmarkChatCompletion for the
// typical chat agent: one inference node, answered by a scripted model
// (testdata/bench).
func BenchmarkChatCompletionInference(b *testing.B) {
	benchmarkPair(b, newBenchServer(b), "chat")
}

// newBenchServer serves testdata/bench's deployment with testdata's keys.
func newBenchServer(b *testing.B) *testServer {
	dir := b.TempDir()
	for _, f := range []string{"bench/deploy.yaml", "bench/replies.yaml", "keys.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return newTestServerAt(b, filepath.Join(dir, "deploy.yaml"), serve.Options{})
}

// benchmarkPair times agentID's turn through the library, as a chat
// completion and the floor, alternately (BenchmarkChatCompletion).
func benchmarkPair(b *testing.B, ts *testServer, agentID string) {
	client := ts.http.Client()
	hello := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	b.Cleanup(hello.Close)
	helloClient := hello.Client()
	var lib, srv, flo []time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		libraryTurn(b, ts, agentID, i)
		t1 := time.Now()
		chatTurn(b, ts, agentID, client)
		t2 := time.Now()
		helloTurn(b, hello.URL, helloClient)
		t3 := time.Now()
		lib, srv, flo = append(lib, t1.Sub(t0)), append(srv, t2.Sub(t1)), append(flo, t3.Sub(t2))
		i++
	}
	var libSum, srvSum, floSum time.Duration
	for k := range lib {
		libSum, srvSum, floSum = libSum+lib[k], srvSum+srv[k], floSum+flo[k]
	}
	b.ReportMetric(float64(libSum.Nanoseconds())/float64(i), "library-ns/turn")
	b.ReportMetric(float64(srvSum.Nanoseconds())/float64(i), "serve-ns/turn")
	b.ReportMetric(float64(floSum.Nanoseconds())/float64(i), "hello-ns/req")
	b.ReportMetric(float64(srvSum)/float64(libSum), "serve/library")
	b.ReportMetric(float64(libSum+floSum)/float64(libSum), "floor/library")
	b.ReportMetric(median(srv)/median(lib), "serve/library-median")
}

// BenchmarkChatCompletionLegs runs each leg of BenchmarkChatCompletion
// alone, the one-node agent's turn through the library, as a chat
// completion and as a streamed one, so that -benchmem tells the
// allocations of each (the pair's are the sum of its three legs).
func BenchmarkChatCompletionLegs(b *testing.B) {
	ts := newTestServer(b, serve.Options{})
	client := ts.http.Client()
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			libraryTurn(b, ts, "echo", i)
			i++
		}
	})
	b.Run("completion", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			chatTurn(b, ts, "echo", client)
		}
	})
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			streamTurn(b, ts, "echo", client)
		}
	})
}

// streamTurn runs chatTurn's turn as a streamed chat completion and reads
// the stream to its end.
func streamTurn(b *testing.B, ts *testServer, agentID string, client *http.Client) {
	data := postChat(b, ts, `{"model":"`+agentID+`","stream":true,"messages":[{"role":"user","content":"hello there"}]}`, client, true)
	if !strings.HasSuffix(string(data), "data: [DONE]\n\n") {
		b.Fatalf("stream did not end: %s", data)
	}
}
