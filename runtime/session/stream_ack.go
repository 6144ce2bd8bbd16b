package session

import (
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// authority tracks what the authoritative sink was offered, delivered and
// acknowledged, and the acknowledged prefix: the text parts of the current
// attempt up to the acknowledged cursor (REF 2.4.14, 2.4.15).
//
// The current attempt is the one of the newest confirmed emission (the
// engine's run-end of attempt n comes before anything of attempt n+1). A
// new attempt starts an empty prefix and forgives what is delivered and
// not yet acknowledged; a frozen prefix stays frozen, empty.
type authority struct {
	id         string // "" when the turn has no authoritative sink
	explicit   bool
	maxUnacked uint64

	mu        sync.Mutex
	attempt   int
	offered   uint64
	delivered uint64
	acked     uint64
	texts     map[uint64]string // text parts of the current attempt above acked
	prefix    strings.Builder
	frozen    bool
}

func (a *authority) init(spec SinkSpec, queueSize int) {
	a.id = spec.ID
	a.explicit = spec.AckMode == AckExplicit
	a.maxUnacked = uint64(positiveOr(spec.MaxUnacked, queueSize))
	a.attempt = 1
	a.texts = map[uint64]string{}
}

// record notes a confirmed emission of the given attempt.
func (a *authority) record(attempt int, cursor uint64, delta event.StreamDeltaPayload) {
	if a.id == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if attempt > a.attempt {
		a.attempt = attempt
		a.acked = max(a.acked, a.delivered)
		a.prefix.Reset()
		clear(a.texts)
	}
	if a.frozen || delta.Type != event.DeltaPart || delta.Part == nil || delta.Part.Type != message.PartText {
		return
	}
	a.texts[cursor] = delta.Part.Text
}

// offer notes the cursor being offered to the sink, before OnDelta runs.
func (a *authority) offer(cursor uint64) {
	a.mu.Lock()
	a.offered = max(a.offered, cursor)
	a.mu.Unlock()
}

// deliver notes a cursor whose OnDelta returned nil. With ack on
// delivery it is acknowledged at once; an explicit sink that now has more
// than MaxUnacked deliveries unacknowledged must be detached (the error
// says why).
func (a *authority) deliver(cursor uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.delivered = max(a.delivered, cursor)
	if a.frozen {
		return nil
	}
	if !a.explicit {
		a.advanceLocked(a.delivered)
		return nil
	}
	if a.delivered-a.acked > a.maxUnacked {
		return fault.New(fault.BudgetExceeded, "deliver",
			"sink %q: %d deliveries unacknowledged, more than max unacked %d", a.id, a.delivered-a.acked, a.maxUnacked)
	}
	return nil
}

func (a *authority) advanceLocked(to uint64) {
	for c := a.acked + 1; c <= to; c++ {
		if t, ok := a.texts[c]; ok {
			a.prefix.WriteString(t)
			delete(a.texts, c)
		}
	}
	a.acked = max(a.acked, to)
}

func (a *authority) ack(sinkID string, cursor uint64) error {
	if cursor == 0 {
		return fault.New(fault.Validation, "ack", "sink %q: cursor must be positive", sinkID)
	}
	if a.id == "" || sinkID != a.id || !a.explicit {
		return fault.New(fault.Validation, "ack", "sink %q is not the turn's authoritative explicit-ack sink", sinkID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case cursor <= a.acked:
		return nil
	case a.frozen:
		return fault.New(fault.Conflict, "ack", "sink %q: the acknowledged prefix is frozen at cursor %d", sinkID, a.acked)
	case cursor > a.offered:
		return fault.New(fault.Conflict, "ack", "sink %q: cursor %d is beyond the offered cursor %d", sinkID, cursor, a.offered)
	}
	a.advanceLocked(cursor)
	return nil
}

func (a *authority) freeze() {
	if a.id == "" {
		return
	}
	a.mu.Lock()
	a.frozen = true
	clear(a.texts)
	a.mu.Unlock()
}

func (a *authority) acknowledged() (string, bool) {
	if a.id == "" {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.prefix.String(), true
}

// freeze freezes the acknowledged prefix: later deliveries and acks do not
// extend it. The turn calls it when an interrupt is requested; a detach of
// the authoritative sink freezes it too.
func (s *stream) freeze() { s.auth.freeze() }

// ack acknowledges every confirmed delivery up to cursor for the
// authoritative explicit sink sinkID (Turn.Ack, REF 2.4.15): cursor 0
// or another sink is Validation; a cursor at or below the acknowledged one
// is a no-op; a frozen prefix or a cursor beyond the one offered is
// Conflict. It may be called from inside OnDelta for the offered cursor.
func (s *stream) ack(sinkID string, cursor uint64) error { return s.auth.ack(sinkID, cursor) }

// acknowledgedPrefix returns the acknowledged prefix and whether the turn
// has an authoritative sink at all (false: the prefix means nothing).
func (s *stream) acknowledgedPrefix() (string, bool) { return s.auth.acknowledged() }

// commitPrefix rewrites res so that it commits exactly prefix (REF
// 2.4.14): the trailing assistant messages of res.Output, and of the main
// channel of res.LastBoard when there is one, are replaced by one assistant
// text message equal to prefix (by none when prefix is empty). The text of
// the replaced messages must start with prefix (Conflict otherwise);
// invalid UTF-8 is Validation. On error res is unchanged.
func commitPrefix(res *agent.Result, prefix string) error {
	if res == nil {
		return fault.New(fault.Validation, "commit prefix", "result must not be nil")
	}
	if !utf8.ValidString(prefix) {
		return fault.New(fault.Validation, "commit prefix", "acknowledged prefix is not valid UTF-8")
	}
	out, err := replaceTrailingAssistant(res.Output, prefix, "output")
	if err != nil {
		return err
	}
	var main []message.Message
	if res.LastBoard != nil {
		if main, err = replaceTrailingAssistant(res.LastBoard.Channel(agent.MainChannel), prefix, "main channel"); err != nil {
			return err
		}
	}
	res.Output = out
	if res.LastBoard != nil {
		if res.LastBoard.Channels == nil {
			res.LastBoard.Channels = map[string][]message.Message{}
		}
		res.LastBoard.Channels[agent.MainChannel] = main
	}
	return nil
}

func replaceTrailingAssistant(msgs []message.Message, prefix, where string) ([]message.Message, error) {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == message.RoleAssistant {
		start--
	}
	var text strings.Builder
	for _, m := range msgs[start:] {
		text.WriteString(m.Text())
	}
	switch {
	case !utf8.ValidString(text.String()):
		return nil, fault.New(fault.Validation, "commit prefix", "assistant text of the %s is not valid UTF-8", where)
	case !strings.HasPrefix(text.String(), prefix):
		return nil, fault.New(fault.Conflict, "commit prefix",
			"acknowledged prefix (%d bytes) does not match the assistant text of the %s (%d bytes)", len(prefix), where, text.Len())
	}
	out := slices.Clone(msgs[:start])
	if prefix != "" {
		out = append(out, message.NewTextMessage(message.RoleAssistant, prefix))
	}
	return out, nil
}
