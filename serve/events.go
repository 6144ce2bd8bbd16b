package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// Event types of a turn's stream (docs/serve.md).
const (
	evDelta          = "delta"           // a stream delta: {type, part, ...}
	evPrompt         = "prompt"          // a question of the turn: session.PromptRequested
	evPromptResolved = "prompt_resolved" // session.PromptResolved
	evEvent          = "event"           // any other event of the run: {subject, payload}
	evEnd            = "end"             // the last one: session.RunEndPayload
	evOverflow       = "overflow"        // the log is full; nothing more is kept but the end
)

// streamEvent is one event of a turn's log. Its id is its index + 1.
type streamEvent struct {
	typ   string
	data  json.RawMessage
	delta *event.StreamDeltaPayload // for evDelta
}

// eventLog keeps every event of one turn, in order, for any number of
// readers that start anywhere: a reader resuming after id n reads n+1 on,
// so nothing is lost or repeated. It is append-only and closes with the
// run-end.
type eventLog struct {
	max int // payload bytes kept, past which only the end is kept
	// acct, when set, counts the bytes the log holds into its tenant's
	// total (Options.MaxTenantEventBytes) until detach or free; past
	// budget, trim frees the tenant's finished logs and, if the total is
	// still over, the log takes no more (REF 11.8.12).
	acct   *atomic.Int64
	budget int64
	trim   func()
	// textOnly: the log keeps only the text deltas, the overflow and the
	// end, all that a chat completion's stream sends; its other events are
	// dropped as they come, before any encoding.
	textOnly bool

	mu     sync.Mutex
	events []streamEvent
	bytes  int
	full   bool
	closed bool
	freed  bool // free dropped the events of the closed log
	// changed, when a reader asked for it (from), is closed at the next
	// append.
	changed  chan struct{}
	prompts  map[string]session.PromptRequested // made at the first prompt
	promptID []string                           // open prompts in arrival order
}

func newEventLog(max int) *eventLog {
	return &eventLog{max: max}
}

// Subjects of a run's events (event.SubjectRunEnd and the others) past
// the run's id: a log tells them apart with isRunSubject, without
// building them for each event.
const (
	subjectEnd             = ".end"
	subjectPromptRequested = ".prompt.requested"
	subjectPromptResolved  = ".prompt.resolved"
)

// isRunSubject reports whether subject is the subject of run that ends
// with rest: the standard subjects' layout, "agent.run.", the run's
// sanitised id, then rest.
func isRunSubject(subject, run, rest string) bool {
	s, ok := strings.CutPrefix(subject, event.SubjectPrefixRun)
	if !ok {
		return false
	}
	s, ok = strings.CutSuffix(s, rest)
	return ok && s == event.SanitiseID(run)
}

// appendLocked adds an event and wakes the readers.
func (l *eventLog) appendLocked(ev streamEvent) {
	if l.closed {
		return
	}
	if ev.typ != evEnd {
		if l.full {
			return
		}
		if l.bytes+len(ev.data) > l.max || (l.acct != nil && l.acct.Load()+int64(len(ev.data)) > l.budget) {
			l.full = true
			ev = streamEvent{typ: evOverflow, data: json.RawMessage(`{"reason":"the turn's event log is full; the rest of the stream is not kept"}`)}
		}
	}
	l.events = append(l.events, ev)
	l.bytes += len(ev.data)
	if l.acct != nil {
		l.acct.Add(int64(len(ev.data)))
	}
	if ev.typ == evEnd {
		l.closed = true
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// changedLocked returns a channel closed at the next append.
func (l *eventLog) changedLocked() chan struct{} {
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// overBudget reports whether n more bytes would take the tenant's logs
// past the budget while the log still takes events (and counts into
// them). A full or closed log does not ask for a trim: so the tenant's
// logs are scanned at most once per running turn while the budget stays
// spent.
func (l *eventLog) overBudget(n int) bool {
	l.mu.Lock()
	acct, taking := l.acct, !l.full && !l.closed
	l.mu.Unlock()
	return taking && acct != nil && l.trim != nil && acct.Load()+int64(n) > l.budget
}

// compact returns raw on one line (server-sent events end a data field at
// a line break); invalid JSON becomes null.
func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return json.RawMessage("null")
	}
	return b.Bytes()
}

// add records one envelope of the run.
func (l *eventLog) add(env event.Envelope, d event.StreamDeltaPayload) {
	run := env.Header(event.HeaderRunID)
	end := d.Type == "" && isRunSubject(env.Subject, run, subjectEnd)
	if l.textOnly && !end && !isTextDelta(env.Subject, d) {
		return
	}
	var ev streamEvent
	switch {
	case end:
		ev = streamEvent{typ: evEnd, data: compact(env.Payload)}
	case isRunSubject(env.Subject, run, subjectPromptRequested):
		ev = streamEvent{typ: evPrompt, data: compact(env.Payload)}
	case isRunSubject(env.Subject, run, subjectPromptResolved):
		ev = streamEvent{typ: evPromptResolved, data: compact(env.Payload)}
	case event.IsStreamDelta(env.Subject): // its data is d's, not the payload's
		data, err := json.Marshal(d)
		if err != nil {
			return
		}
		dd := d
		ev = streamEvent{typ: evDelta, data: data, delta: &dd}
	default:
		data, err := json.Marshal(struct {
			Subject string          `json:"subject"`
			Payload json.RawMessage `json:"payload,omitempty"`
		}{env.Subject, compact(env.Payload)})
		if err != nil {
			return
		}
		ev = streamEvent{typ: evEvent, data: data}
	}
	if ev.typ != evEnd && l.overBudget(len(ev.data)) {
		l.trim()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev.typ {
	case evPrompt:
		var p session.PromptRequested
		if env.Decode(&p) == nil && p.PromptID != "" {
			if l.prompts == nil {
				l.prompts = map[string]session.PromptRequested{}
			}
			l.prompts[p.PromptID] = p
			l.promptID = append(l.promptID, p.PromptID)
		}
	case evPromptResolved:
		var p session.PromptResolved
		if env.Decode(&p) == nil {
			l.resolveLocked(p.PromptID)
		}
	}
	l.appendLocked(ev)
}

// isTextDelta reports whether an envelope of subject with the delta d
// streams text.
func isTextDelta(subject string, d event.StreamDeltaPayload) bool {
	return d.Part != nil && d.Part.Type == message.PartText && d.Part.Text != "" && event.IsStreamDelta(subject)
}

func (l *eventLog) resolveLocked(id string) {
	delete(l.prompts, id)
	for i, p := range l.promptID {
		if p == id {
			l.promptID = append(l.promptID[:i], l.promptID[i+1:]...)
			break
		}
	}
}

// end closes the log with an end event of status when the run-end never
// reached it (a detached sink, a turn that failed to finish its stream).
func (l *eventLog) end(status agent.Status, errText string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	data, _ := json.Marshal(session.RunEndPayload{Status: status, Error: errText})
	l.appendLocked(streamEvent{typ: evEnd, data: data})
}

// from returns the events after id after, whether the log is closed, and,
// while it is open, a channel closed at the next append.
func (l *eventLog) from(after int) ([]streamEvent, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.freed {
		return nil, true, nil
	}
	if after < 0 {
		after = 0
	}
	if after > len(l.events) {
		after = len(l.events)
	}
	var changed <-chan struct{}
	if !l.closed {
		changed = l.changedLocked()
	}
	return l.events[after:len(l.events):len(l.events)], l.closed, changed
}

// length returns the id of the log's last event (0: none yet) and
// whether the log is closed.
func (l *eventLog) length() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events), l.closed
}

// size returns the payload bytes the log holds.
func (l *eventLog) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// isClosed reports whether the log got its end.
func (l *eventLog) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// isFreed reports whether free dropped the log's events.
func (l *eventLog) isFreed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.freed
}

// free drops the events of a closed log and returns the bytes they held;
// an open log is kept (0). Streams already reading it end.
func (l *eventLog) free() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed || l.freed {
		return 0
	}
	n := l.bytes
	if l.acct != nil {
		l.acct.Add(-int64(n))
	}
	l.events, l.bytes, l.freed = nil, 0, true
	return n
}

// detach stops counting the log into its tenant's total: the log is no
// longer kept (its turn or session was dropped); streams reading it go on.
func (l *eventLog) detach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.acct != nil {
		l.acct.Add(-int64(l.bytes))
		l.acct = nil
	}
}

// openPrompts lists the prompts waiting for an answer.
func (l *eventLog) openPrompts() []session.PromptRequested {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]session.PromptRequested, 0, len(l.promptID))
	for _, id := range l.promptID {
		out = append(out, l.prompts[id])
	}
	return out
}

// follow calls fn with each event after id after, in order, until the log
// closes (nil), fn fails (its error) or ctx ends (its error).
func (l *eventLog) follow(ctx context.Context, after int, fn func(id int, ev streamEvent) error) error {
	return l.followFlushing(ctx, after, fn, nil)
}

// followFlushing is follow, and calls flush, when it is not nil, after
// each run of events that were in the log together, before it waits for
// more: a stream writes them and sends them at once.
func (l *eventLog) followFlushing(ctx context.Context, after int, fn func(id int, ev streamEvent) error, flush func() error) error {
	next := after
	for {
		evs, closed, changed := l.from(next)
		for _, ev := range evs {
			next++
			if err := fn(next, ev); err != nil {
				return err
			}
		}
		if flush != nil && len(evs) > 0 {
			if err := flush(); err != nil {
				return err
			}
		}
		if closed && len(evs) == 0 {
			return nil
		}
		if closed {
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sink returns the stream sink that feeds the log.
func (l *eventLog) sink() agent.StreamSink {
	return agent.StreamSinkFunc(func(_ context.Context, env event.Envelope, d event.StreamDeltaPayload) error {
		l.add(env, d)
		return nil
	})
}

// sinkSpec attaches the log to a turn's confirmed stream. Its queue is the
// deployment's runtime.sessions.sink_buffer: the sink only appends to the
// log, and a larger queue would cost every turn its allocation. A sink
// detached for any cause (its queue filled faster than it drained) loses
// the rest of the stream: the log records an overflow and keeps only the
// end, which the turn's watcher adds with the turn's own status
// (REF 11.3.7).
func (l *eventLog) sinkSpec() session.SinkSpec {
	return session.SinkSpec{ID: "serve", Sink: l.sink(), Visibility: session.VisibilityConfirmed,
		OnDetach: func(err error) {
			if err != nil {
				l.lose("the rest of the turn's stream was lost: " + err.Error())
			}
		}}
}

// lose records that the log gets no more events but its end: one overflow
// event saying why.
func (l *eventLog) lose(why string) {
	data, err := json.Marshal(map[string]string{"reason": why})
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.full {
		return
	}
	l.appendLocked(streamEvent{typ: evOverflow, data: data})
	l.full = true
}
