package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
)

// syncTap hands the replayed turn's tap from its host factory to Replay.
type syncTap struct {
	mu sync.Mutex
	t  *tap
}

// set keeps the first tap of the replayed run; the turns a replayed run
// might start itself (none: delegation answers from the recording) keep
// theirs.
func (s *syncTap) set(t *tap, runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t == nil && t.runID == runID {
		s.t = t
	}
}

func (s *syncTap) get() *tap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t
}

// EventDivergenceError is the error a replay's host returns for an event
// the recording does not hold at its place: a script's host.emit or
// host.publish fails with it, so the script position of the call is
// known. It is of kind Validation.
type EventDivergenceError struct {
	Node      string
	Index     int // the node's event number, from 0
	Want, Got *Event
}

func (e *EventDivergenceError) Error() string {
	if e.Want == nil {
		return fmt.Sprintf("replay: node %q event %d: the run publishes %s, the recording has no more events for the node", e.Node, e.Index, e.Got.Subject)
	}
	return fmt.Sprintf("replay: node %q event %d: the run publishes %s %s, the recording has %s %s",
		e.Node, e.Index, e.Got.Subject, e.Got.Payload, e.Want.Subject, e.Want.Payload)
}

// Unwrap makes errors.Is(err, fault.Validation) hold.
func (e *EventDivergenceError) Unwrap() error { return fault.Validation }

// byNode groups events by node, keeping their order.
func byNode(events []Event) map[string][]Event {
	out := map[string][]Event{}
	for _, ev := range events {
		out[ev.Node] = append(out[ev.Node], ev)
	}
	return out
}

// eventCheck compares each event a script node publishes with the
// recorded event at its place among the node's events. Events of
// different nodes may interleave differently (parallel branches): each
// node's own order is what is compared.
func eventCheck(recorded []Event) func(int, Event) error {
	want := byNode(recorded)
	var mu sync.Mutex
	seen := map[string]int{}
	return func(_ int, ev Event) error {
		mu.Lock()
		i := seen[ev.Node]
		seen[ev.Node]++
		mu.Unlock()
		if ev.Node == "" || strings.Contains(ev.Subject, ".step.") {
			return nil // the engine's own events: compared once the run ended
		}
		q := want[ev.Node]
		got := ev
		if i >= len(q) {
			return &EventDivergenceError{Node: ev.Node, Index: i, Got: &got}
		}
		if !sameEvent(q[i], ev) {
			w := q[i]
			return &EventDivergenceError{Node: ev.Node, Index: i, Want: &w, Got: &got}
		}
		return nil
	}
}

func sameEvent(a, b Event) bool {
	return a.Subject == b.Subject && a.Node == b.Node && bytes.Equal(compact(a.Payload), compact(b.Payload))
}

// compare returns the first divergence of got from rec, or nil.
func compare(rec, got *Recording, journal *hostabi.Journal, runErr error) *Divergence {
	where := whereOf(runErr)
	if d := journal.Divergence(); d != nil {
		out := &Divergence{What: "input", Node: d.Node, Call: d.Call, HostCall: d.HostCall, Func: d.Func, Where: where}
		out.Got, _ = json.Marshal(map[string]any{"func": d.Func, "args": d.Args})
		if d.Want != nil {
			out.Expected, _ = json.Marshal(map[string]any{"func": d.Want.Func, "args": d.Want.Args})
		}
		out.Diff = diffJSON(out.Expected, out.Got)
		return out
	}
	if d := compareEvents(rec.Events, got.Events); d != nil {
		d.Where = where
		return d
	}
	for i := range max(len(rec.Boards), len(got.Boards)) {
		var w, g *BoardWrite
		if i < len(rec.Boards) {
			w = &rec.Boards[i]
		}
		if i < len(got.Boards) {
			g = &got.Boards[i]
		}
		wb, gb := marshalOrNil(w), marshalOrNil(g)
		if !bytes.Equal(wb, gb) {
			node := ""
			if w != nil {
				node = w.Node
			} else {
				node = g.Node
			}
			return &Divergence{What: "board", Node: node, Index: i, Where: where, Expected: wb, Got: gb, Diff: diffJSON(wb, gb)}
		}
	}
	if rec.Result != nil {
		wb, gb := marshalOrNil(rec.Result), marshalOrNil(got.Result)
		if !bytes.Equal(wb, gb) {
			return &Divergence{What: "result", Where: where, Expected: wb, Got: gb, Diff: diffJSON(wb, gb)}
		}
	}
	if left := journal.Unanswered(); len(left) > 0 {
		e := left[0]
		call := 0
		for _, in := range rec.Inputs {
			if in.N == e.Seq {
				call = in.Call
			}
		}
		exp, _ := json.Marshal(map[string]any{"func": e.Func, "args": e.Args})
		return &Divergence{What: "unused_input", Node: e.Node, Call: call, Func: e.Func, Expected: exp, Where: where}
	}
	return nil
}

// compareEvents compares the events node by node, nodes in the order of
// their first recorded event.
func compareEvents(want, got []Event) *Divergence {
	w, g := byNode(want), byNode(got)
	var nodes []string
	seen := map[string]bool{}
	for _, list := range [][]Event{want, got} {
		for _, ev := range list {
			if !seen[ev.Node] {
				seen[ev.Node] = true
				nodes = append(nodes, ev.Node)
			}
		}
	}
	// The run's own events (start, end) say how the nodes ended: a node's
	// difference is the cause, so the run's come last.
	if i := slices.Index(nodes, ""); i >= 0 {
		nodes = append(slices.Delete(nodes, i, i+1), "")
	}
	for _, n := range nodes {
		for i := range max(len(w[n]), len(g[n])) {
			var a, b *Event
			if i < len(w[n]) {
				a = &w[n][i]
			}
			if i < len(g[n]) {
				b = &g[n][i]
			}
			if a != nil && b != nil && sameEvent(*a, *b) {
				continue
			}
			ab, bb := marshalOrNil(a), marshalOrNil(b)
			return &Divergence{What: "event", Node: n, Index: i, Expected: ab, Got: bb, Diff: diffJSON(ab, bb)}
		}
	}
	return nil
}

func marshalOrNil[T any](v *T) json.RawMessage {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// maxDiffLines bounds a structural diff.
const maxDiffLines = 20

// diffJSON lists where two JSON values differ: "path: expected X, got Y".
func diffJSON(a, b json.RawMessage) []string {
	var x, y any
	if len(a) > 0 {
		_ = json.Unmarshal(a, &x)
	}
	if len(b) > 0 {
		_ = json.Unmarshal(b, &y)
	}
	var out []string
	walkDiff("$", x, y, len(a) > 0, len(b) > 0, &out)
	return out
}

func walkDiff(path string, x, y any, hasX, hasY bool, out *[]string) {
	if len(*out) >= maxDiffLines {
		return
	}
	if hasX && hasY {
		switch xv := x.(type) {
		case map[string]any:
			if yv, ok := y.(map[string]any); ok {
				keys := map[string]bool{}
				for k := range xv {
					keys[k] = true
				}
				for k := range yv {
					keys[k] = true
				}
				sorted := make([]string, 0, len(keys))
				for k := range keys {
					sorted = append(sorted, k)
				}
				sort.Strings(sorted)
				for _, k := range sorted {
					a, okA := xv[k]
					b, okB := yv[k]
					walkDiff(path+"."+k, a, b, okA, okB, out)
				}
				return
			}
		case []any:
			if yv, ok := y.([]any); ok {
				for i := range max(len(xv), len(yv)) {
					var a, b any
					if i < len(xv) {
						a = xv[i]
					}
					if i < len(yv) {
						b = yv[i]
					}
					walkDiff(fmt.Sprintf("%s[%d]", path, i), a, b, i < len(xv), i < len(yv), out)
				}
				return
			}
		}
		xb, _ := json.Marshal(x)
		yb, _ := json.Marshal(y)
		if bytes.Equal(xb, yb) {
			return
		}
		*out = append(*out, fmt.Sprintf("%s: expected %s, got %s", path, clipJSON(xb), clipJSON(yb)))
		return
	}
	switch {
	case hasX:
		xb, _ := json.Marshal(x)
		*out = append(*out, fmt.Sprintf("%s: expected %s, got nothing", path, clipJSON(xb)))
	case hasY:
		yb, _ := json.Marshal(y)
		*out = append(*out, fmt.Sprintf("%s: expected nothing, got %s", path, clipJSON(yb)))
	}
}

func clipJSON(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
