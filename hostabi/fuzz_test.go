package hostabi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
)

// fuzzLimits are small enough for the fuzzer to reach every cap.
func fuzzLimits() sandbox.Limits {
	return sandbox.Limits{MaxValueBytes: 4096, MaxEvents: 4, MaxEventBytes: 2048, MaxLogBytes: 512}
}

// FuzzCall checks that Call never panics on any name and arguments, that
// every error carries a fault kind, that every result is JSON within the
// value cap, and that only non-deterministic successes and host errors are
// journaled.
func FuzzCall(f *testing.F) {
	for name, args := range goodArgs() {
		f.Add(name, []byte(args))
		f.Add(name, []byte(`[`+args+`]`))
		f.Add(name, []byte(strings.TrimSuffix(args, "]")))
	}
	for _, s := range []string{``, `null`, `[null,null,null,null]`, `{"a":1}`, `["\u0000"]`, "[\"\xff\"]", `[1e999]`} {
		f.Add(hostabi.FuncEmit, []byte(s))
		f.Add("unknown", []byte(s))
	}
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		r := newRecorder()
		r.steer = []message.Message{message.NewTextMessage(message.RoleUser, "s")}
		r.interrupts <- agent.Interrupt{Cause: agent.CauseCustom}
		j := hostabi.NewJournal()
		d := newDispatcher(r.fullHost(), allCaps(), j, fuzzLimits())
		for range 3 { // repeated calls reach the counters' caps
			before := j.Len()
			out, err := d.Call(context.Background(), name, args)
			if err != nil {
				if fault.KindOf(err) == nil {
					t.Fatalf("Call(%q, %q): an error without a kind: %v", name, args, err)
				}
				if out != nil {
					t.Fatalf("Call(%q, %q): a result with an error", name, args)
				}
				continue
			}
			if !json.Valid(out) || int64(len(out)) > fuzzLimits().MaxValueBytes {
				t.Fatalf("Call(%q, %q) = %q: not JSON within the cap", name, args, out)
			}
			fn, _ := hostabi.Lookup(name)
			if grew := j.Len() - before; (grew == 1) != fn.NonDeterministic {
				t.Fatalf("Call(%q): journal grew by %d, non-deterministic=%v", name, grew, fn.NonDeterministic)
			}
		}
		if n, _ := d.Events(); n > fuzzLimits().MaxEvents || len(r.envelopes()) != n {
			t.Fatalf("events %d, published %d, cap %d", n, len(r.envelopes()), fuzzLimits().MaxEvents)
		}
		for _, env := range r.envelopes() {
			if !event.Match(event.PatternRun("r1"), env.Subject) {
				t.Fatalf("published outside the run: %q", env.Subject)
			}
		}
	})
}

// FuzzEmitPayload checks the host.emit mapping: never a panic, a delta
// that passes event validation or a Validation error, and through the
// dispatcher at most one delta on the node's stream subject.
func FuzzEmitPayload(f *testing.F) {
	for _, s := range []struct{ typ, payload string }{
		{"token", `"hi"`}, {"token", `""`}, {"token", `null`},
		{"tool_call", `{"id":"c","name":"f","arguments":{"a":1}}`}, {"tool_call", `{"id":"c"}`},
		{"tool_result", `{"tool_call_id":"c","content":"x","is_error":true}`},
		{"part", `{"type":"data","data":{"x":[1]}}`}, {"part", `{"type":"tool_call","tool_call":{"id":"c","name":"f"}}`},
		{"finish", `{"finish_reason":"stop"}`}, {"provider_outputs", `[{"provider":"p","extension":"e","value":1}]`},
		{"parallel_branch_cancel", `{}`}, {"custom", `[1,2]`}, {"custom", ``}, {"", `1`}, {"x", `{`},
	} {
		f.Add(s.typ, []byte(s.payload))
	}
	f.Fuzz(func(t *testing.T, typ string, payload []byte) {
		delta, err := hostabi.EmitDelta(typ, payload)
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("EmitDelta(%q, %q): not a Validation error: %v", typ, payload, err)
			}
		} else {
			if verr := delta.Validate(); verr != nil {
				t.Fatalf("EmitDelta(%q, %q) gave an invalid delta: %v", typ, payload, verr)
			}
			if _, merr := json.Marshal(delta); merr != nil {
				t.Fatalf("EmitDelta(%q, %q) gave a delta that does not encode: %v", typ, payload, merr)
			}
		}
		if !json.Valid(payload) {
			return
		}
		typJSON, _ := json.Marshal(typ)
		args := `[` + string(typJSON) + `,` + string(payload) + `]`
		r := newRecorder()
		d := newDispatcher(r.fullHost(), nil, nil, sandbox.Limits{})
		out, cerr := d.Call(context.Background(), hostabi.FuncEmit, json.RawMessage(args))
		envs := r.envelopes()
		switch {
		case cerr != nil && fault.KindOf(cerr) == nil:
			t.Fatalf("emit %s: an error without a kind: %v", args, cerr)
		case cerr == nil && string(out) != "null":
			t.Fatalf("emit %s = %s, want null", args, out)
		case len(envs) > 1:
			t.Fatalf("emit %s published %d envelopes", args, len(envs))
		case len(envs) == 1 && envs[0].Subject != "agent.run.r1.stream.bot_node_n1.delta":
			t.Fatalf("emit %s published on %q", args, envs[0].Subject)
		case len(envs) == 1 && err != nil:
			t.Fatalf("emit %s published a delta EmitDelta refuses: %v", args, err)
		}
	})
}

// FuzzAskUserArgs checks that a prompt reaches the host only when it has
// at least one valid part, and that every refusal is a Validation error.
func FuzzAskUserArgs(f *testing.F) {
	f.Add([]byte(`[{"parts":[{"type":"text","text":"q"}],"schema":{"type":"object"},"source":"s","metadata":{"k":"v"}}]`))
	f.Add([]byte(`[{"parts":[{"type":"data","data":null}]}]`))
	f.Add([]byte(`[{"parts":[{"type":"tool_call","tool_call":{"id":"c","name":"f","arguments":"{}"}}]}]`))
	f.Add([]byte(`[{"parts":[]}]`))
	f.Add([]byte(`[{"Parts":[{"TYPE":"text","text":"q"}]}]`))
	f.Add([]byte(`[{"parts":[{"type":"text","text":"q"}],"schema":[1,{}]}]`))
	f.Fuzz(func(t *testing.T, args []byte) {
		r := newRecorder()
		d := newDispatcher(r.fullHost(), []string{agent.CapAskUser}, nil, sandbox.Limits{})
		out, err := d.Call(context.Background(), hostabi.FuncAskUser, args)
		if err != nil {
			if !fault.Is(err, fault.Validation) && !fault.Is(err, fault.BudgetExceeded) {
				t.Fatalf("askUser %q: %v", args, err)
			}
			if len(r.prompts) != 0 {
				t.Fatalf("askUser %q: a refused prompt reached the host", args)
			}
			return
		}
		if len(r.prompts) != 1 || len(r.prompts[0].Parts) == 0 {
			t.Fatalf("askUser %q: the host saw %d prompts", args, len(r.prompts))
		}
		p := r.prompts[0]
		if verr := (message.Message{Role: message.RoleAssistant, Parts: p.Parts}).Validate(); verr != nil {
			t.Fatalf("askUser %q: an invalid part reached the host: %v", args, verr)
		}
		if p.Schema != nil && !json.Valid(p.Schema) {
			t.Fatalf("askUser %q: the schema is not JSON", args)
		}
		if !json.Valid(out) {
			t.Fatalf("askUser %q: the result is not JSON", args)
		}
	})
}

// FuzzPublishSubject checks that every accepted suffix lands in the run's
// own custom namespace as a valid subject, through PublishSubject and
// through the dispatcher.
func FuzzPublishSubject(f *testing.F) {
	for _, s := range []string{"progress", "agent.run.other.end", "runtime.agent.x.registered", "a..b", "*", "a.>",
		".", "", strings.Repeat("z", 1100), "é.ü", "a b", "\x00"} {
		f.Add("r1", s)
	}
	f.Add("r.1", "x")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, run, suffix string) {
		subject, err := hostabi.PublishSubject(run, suffix)
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("PublishSubject(%q, %q): not a Validation error: %v", run, suffix, err)
			}
		} else {
			own := event.PatternRun(run)
			if event.ValidateSubject(subject) != nil || !event.Match(own, subject) ||
				!strings.HasPrefix(subject, "agent.run."+event.SanitiseID(run)+".custom.") {
				t.Fatalf("PublishSubject(%q, %q) = %q escapes %q", run, suffix, subject, own)
			}
		}
		r := newRecorder()
		d := hostabi.NewDispatcher(hostabi.Config{Host: r.fullHost(), Node: "n",
			Run: agent.Run{ID: run, AgentID: "a", Capabilities: []string{agent.CapPublish}}})
		args, _ := json.Marshal([]any{suffix, 1})
		_, cerr := d.Call(context.Background(), hostabi.FuncPublish, args)
		envs := r.envelopes()
		if (cerr == nil) != (len(envs) == 1) {
			t.Fatalf("publish %q: error %v, %d envelopes", suffix, cerr, len(envs))
		}
		if len(envs) == 1 && !strings.HasPrefix(envs[0].Subject, "agent.run."+event.SanitiseID(run)+".custom.") {
			t.Fatalf("publish %q landed on %q", suffix, envs[0].Subject)
		}
	})
}

// FuzzDecodeJournal checks that a journal's JSON decodes strictly without
// panicking and that an accepted journal survives a round trip.
func FuzzDecodeJournal(f *testing.F) {
	f.Add([]byte(`{"version":1,"entries":[]}`))
	f.Add([]byte(`{"version":1,"entries":[{"seq":1,"node":"n","func":"now","args":[],"result":{"unix_ms":1,"iso":"x"}},` +
		`{"seq":2,"node":"n","func":"askUser","args":[{}],"error":{"code":"timeout","message":"m"}}]}`))
	f.Add([]byte(`{"version":1,"entries":[{"seq":1,"node":"n","func":"x","args":[ 1 ],"result":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := hostabi.DecodeJournal(data)
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("DecodeJournal: not a Validation error: %v", err)
			}
			return
		}
		out, err := json.Marshal(j)
		if err != nil {
			t.Fatalf("marshal an accepted journal: %v", err)
		}
		back, err := hostabi.DecodeJournal(out)
		if err != nil {
			t.Fatalf("decode the re-encoded journal %s: %v", out, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(out) {
			t.Fatalf("the journal's JSON is not stable:\n%s\n%s", out, again)
		}
	})
}
