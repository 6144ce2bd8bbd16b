package observe

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
)

// FuzzOnEvent hands the observer's sink envelopes with any subject,
// headers and payload: it never panics, and every run it starts it ends
// or keeps within MaxOpenRuns.
func FuzzOnEvent(f *testing.F) {
	doc, err := deploy.Parse([]byte("version: v1\nresources:\n  events: {kind: event.Bus, impl: memory}\nruntime: {event_bus: events}\n"))
	if err != nil {
		f.Fatal(err)
	}
	app, err := builtin.NewBuilder().Build(context.Background(), doc)
	if err != nil {
		f.Fatal(err)
	}
	defer app.Close()
	o, err := New(context.Background(), app, Options{MaxOpenRuns: 4})
	if err != nil {
		f.Fatal(err)
	}
	defer o.Close()
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
