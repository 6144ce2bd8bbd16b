package observe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
)

func newBareObserver(t testing.TB, opts Options) *Observer {
	t.Helper()
	doc, err := deploy.Parse([]byte("version: v1\nresources:\n  events: {kind: event.Bus, impl: memory}\nruntime: {event_bus: events}\n"))
	if err != nil {
		t.Fatal(err)
	}
	app, err := builtin.NewBuilder().Build(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	o, err := New(context.Background(), app, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	return o
}

// REF 13.2.11: past MaxOpenRuns the oldest run is no longer followed,
// and a run started again without an end is followed once; the running
// gauge counts the followed runs.
func TestOpenRunsBounded(t *testing.T) {
	o := newBareObserver(t, Options{MaxOpenRuns: 4})
	start := func(id string) {
		env := event.Envelope{Subject: event.SubjectRunStart(id), Time: time.Unix(1, 0),
			Headers: map[string]string{event.HeaderRunID: id, event.HeaderAgentID: "bot", event.HeaderTenant: "acme"}}
		if err := o.onEvent(context.Background(), env); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5", "r6", "r6"} {
		start(id)
	}
	o.mu.Lock()
	_, first := o.runs["r1"]
	_, last := o.runs["r6"]
	n := len(o.runs)
	o.mu.Unlock()
	if n != 4 || first || !last {
		t.Fatalf("open runs: %d (r1 %v, r6 %v), want 4 without r1 and with r6", n, first, last)
	}
	if got := testutil.ToFloat64(o.m.running.WithLabelValues("acme")); got != 4 {
		t.Fatalf("running gauge %v, want 4", got)
	}
}

// FuzzOnEvent hands the observer's sink envelopes with any subject,
// headers and payload: it never panics, and every run it starts it ends
// or keeps within MaxOpenRuns.
func FuzzOnEvent(f *testing.F) {
	o := newBareObserver(f, Options{MaxOpenRuns: 4})
	f.Add("agent.run.r1.start", "r1", "bot", "", "", `{"graph":"g"}`)
	f.Add("agent.run.r1.end", "r1", "bot", "", "", `{"graph":"g","error":"tenant \"t\": quota sessions of 1 reached","error_kind":"budget_exceeded"}`)
	f.Add("agent.run.r1.call.bot_node_m.model", "r1", "bot", "2026-01-02T03:04:05.000000006Z", "", `{"name":"m","input_tokens":-5,"output_tokens":9}`)
	f.Add("agent.run.r1.call.bot_node_t.tool", "r1", "bot", "not a time", "", `{"name":"t","tool_call_id":"c","error":"x"}`)
	f.Add("agent.run.r2.end", "r2", "", "", "1.5", `[1,2]`)
	f.Add("agent.run.r3.end", "r3", "bot", "", "NaN", `{"error":"x","error_kind":"nonsense"}`)
	f.Fuzz(func(t *testing.T, subject, runID, agentID, callStart, cpuMs, payload string) {
		env := event.Envelope{Subject: subject, Time: time.Unix(1, 0), Payload: []byte(payload),
			Headers: map[string]string{event.HeaderRunID: runID, event.HeaderAgentID: agentID,
				event.HeaderCallStart: callStart, event.HeaderCPUMs: cpuMs}}
		if err := o.onEvent(context.Background(), env); err != nil {
			t.Fatal(err)
		}
		o.mu.Lock()
		n := len(o.runs)
		o.mu.Unlock()
		if n > 4 {
			t.Fatalf("%d runs open, want at most 4", n)
		}
	})
}

// REF 13.2.6: the run a run names as its parent (parent_run_id) is its
// span's parent, when the observer follows it.
func TestChildRunSpanNests(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	o := newBareObserver(t, Options{TracerProvider: tp})
	send := func(subject string, headers map[string]string) {
		if err := o.onEvent(context.Background(), event.Envelope{Subject: subject, Time: time.Unix(1, 0), Headers: headers}); err != nil {
			t.Fatal(err)
		}
	}
	send(event.SubjectRunStart("p"), map[string]string{event.HeaderRunID: "p", event.HeaderAgentID: "lead"})
	send(event.SubjectRunStart("c"), map[string]string{event.HeaderRunID: "c", event.HeaderAgentID: "helper",
		event.HeaderParentRunID: "p"})
	send(event.SubjectRunEnd("c"), map[string]string{event.HeaderRunID: "c", event.HeaderAgentID: "helper"})
	send(event.SubjectRunEnd("p"), map[string]string{event.HeaderRunID: "p", event.HeaderAgentID: "lead"})
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "invoke_agent helper" || spans[1].Name != "invoke_agent lead" {
		t.Fatalf("spans: %v", spans)
	}
	if spans[0].Parent.SpanID() != spans[1].SpanContext.SpanID() {
		t.Fatal("the child run's span is not a child of its parent's")
	}
}

// REF 13.2.13: the strings a run's events and requests carry (a model's
// or a tool's name, a tool call id, an error, a context id, an HTTP
// method) reach a span at most maxAttrLen bytes long, and a method HTTP
// does not define is "_OTHER".
func TestSpanStringsBounded(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	o := newBareObserver(t, Options{TracerProvider: tp})
	big := strings.Repeat("é", 50000)
	send := func(subject, payload string) {
		env := event.Envelope{Subject: subject, Time: time.Unix(1, 0), Payload: []byte(payload),
			Headers: map[string]string{event.HeaderRunID: "r1", event.HeaderAgentID: "bot", event.HeaderContextID: big}}
		if err := o.onEvent(context.Background(), env); err != nil {
			t.Fatal(err)
		}
	}
	js := strconv.Quote(big)
	send(event.SubjectRunStart("r1"), `{}`)
	send(event.SubjectModelCall("r1", "n"), `{"name":`+js+`,"provider":`+js+`,"node_id":`+js+`,"finish_reason":`+js+`,"error":`+js+`,"error_kind":`+js+`}`)
	send(event.SubjectToolCall("r1", "n"), `{"name":`+js+`,"tool_call_id":`+js+`,"error":`+js+`}`)
	send(event.SubjectRunEnd("r1"), `{"error":`+js+`,"error_kind":"internal"}`)

	h := o.HTTPMiddleware()(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Method = strings.Repeat("X", 100000)
	h.ServeHTTP(httptest.NewRecorder(), req)

	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	for _, s := range spans {
		check := func(what, v string) {
			if len(v) > maxAttrLen || !utf8.ValidString(v) {
				t.Errorf("span %.30q: %s is %d bytes (valid UTF-8: %v), want at most %d", s.Name, what, len(v), utf8.ValidString(v), maxAttrLen)
			}
		}
		check("name", s.Name)
		check("status", s.Status.Description)
		for _, a := range s.Attributes {
			if a.Value.Type() == attribute.STRINGSLICE {
				for _, v := range a.Value.AsStringSlice() {
					check(string(a.Key), v)
				}
			} else {
				check(string(a.Key), a.Value.Emit())
			}
			if a.Key == "http.request.method" && a.Value.AsString() != "_OTHER" {
				t.Errorf("http.request.method %.30q, want _OTHER", a.Value.AsString())
			}
		}
	}
}
