package session

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// confirmedStream turns the bus order of a run into the confirmed stream
// (REF 2.4.8 to 2.4.10): speculative branch deltas are held per
// (fork_id, branch_id) until the branch's terminal, released in order on
// parallel_branch_accept and dropped on parallel_branch_cancel; the control
// delta itself and every other envelope pass through at once. Each
// emission gets the next delivery cursor, from 1.
//
// A held delta counts against the speculative buffer (events and payload
// bytes), and every branch seen in the current attempt counts as a branch
// state; exceeding a limit, or a protocol violation, kills the stream for
// good: offer and endAttempt return the cause once and emit nothing more.
//
// confirmedStream is not safe for concurrent use; the stream calls it under
// its lock.
type confirmedStream struct {
	maxEvents int // held deltas, and branch states, at most
	maxBytes  int // payload bytes of held deltas at most

	branches     map[branchKey]*branchState
	pending      int
	pendingBytes int
	cursor       uint64
	err          error // why the stream died; nil while it lives
}

type branchKey struct{ fork, branch string }

type branchState struct {
	terminal event.DeltaType // "" until accept or cancel
	held     []heldDelta
	bytes    int
}

type heldDelta struct {
	env   event.Envelope
	delta event.StreamDeltaPayload
}

// confirmedEmit receives each confirmed emission, in order; env already
// carries the cursor header.
type confirmedEmit func(env event.Envelope, delta event.StreamDeltaPayload, cursor uint64)

func newConfirmedStream(maxEvents, maxBytes int) *confirmedStream {
	return &confirmedStream{maxEvents: maxEvents, maxBytes: maxBytes, branches: map[branchKey]*branchState{}}
}

// dead reports whether the stream has failed.
func (c *confirmedStream) dead() bool { return c.err != nil }

// offer routes one envelope of the run (with its decoded delta; an empty
// delta for envelopes that are not stream deltas). It returns the error
// the stream dies with, the first time only.
func (c *confirmedStream) offer(env event.Envelope, delta event.StreamDeltaPayload, emit confirmedEmit) error {
	if c.err != nil {
		return nil
	}
	control := delta.Type.IsControl()
	if !delta.Speculative && !control {
		c.emit(env, delta, emit)
		return nil
	}
	if delta.ForkID == "" || delta.BranchID == "" {
		return c.fail(fault.New(fault.Validation, "confirmed stream",
			"a speculative or %q delta on %q has no fork_id or branch_id", delta.Type, env.Subject))
	}
	key := branchKey{delta.ForkID, delta.BranchID}
	st := c.branches[key]
	if st == nil {
		if len(c.branches) >= c.maxEvents {
			return c.fail(fault.New(fault.BudgetExceeded, "confirmed stream",
				"more than %d speculative branch states (speculative_buffer_events)", c.maxEvents))
		}
		st = &branchState{}
		c.branches[key] = st
	}
	if control {
		return c.terminate(key, st, env, delta, emit)
	}
	if st.terminal != "" {
		return c.fail(fault.New(fault.Conflict, "confirmed stream",
			"speculative delta after %s of fork %q branch %q", st.terminal, key.fork, key.branch))
	}
	size := len(env.Payload)
	switch {
	case c.pending+1 > c.maxEvents:
		return c.fail(fault.New(fault.BudgetExceeded, "confirmed stream",
			"more than %d held speculative deltas (speculative_buffer_events)", c.maxEvents))
	case c.pendingBytes+size > c.maxBytes:
		return c.fail(fault.New(fault.BudgetExceeded, "confirmed stream",
			"more than %d bytes of held speculative deltas (speculative_buffer_bytes)", c.maxBytes))
	}
	st.held = append(st.held, heldDelta{env, delta})
	st.bytes += size
	c.pending++
	c.pendingBytes += size
	return nil
}

// terminate handles parallel_branch_accept or parallel_branch_cancel: the
// control delta is emitted, then on accept the branch's held deltas in
// order. A repeat of the same terminal is ignored; a different one kills
// the stream.
func (c *confirmedStream) terminate(key branchKey, st *branchState, env event.Envelope, delta event.StreamDeltaPayload, emit confirmedEmit) error {
	switch st.terminal {
	case delta.Type:
		return nil
	case "":
	default:
		return c.fail(fault.New(fault.Conflict, "confirmed stream",
			"fork %q branch %q got %s after %s", key.fork, key.branch, delta.Type, st.terminal))
	}
	st.terminal = delta.Type
	c.emit(env, delta, emit)
	if delta.Type == event.DeltaParallelBranchAccept {
		for _, h := range st.held {
			c.emit(h.env, h.delta, emit)
		}
	}
	c.pending -= len(st.held)
	c.pendingBytes -= st.bytes
	st.held, st.bytes = nil, 0
	return nil
}

// endAttempt marks the end of one engine attempt: every branch must have
// its terminal by now. The branch states are cleared for the next attempt.
func (c *confirmedStream) endAttempt() error {
	if c.err != nil {
		return nil
	}
	var open []branchKey
	for k, st := range c.branches {
		if st.terminal == "" {
			open = append(open, k)
		}
	}
	if len(open) > 0 {
		k := slices.MinFunc(open, func(a, b branchKey) int {
			return cmp.Or(cmp.Compare(a.fork, b.fork), cmp.Compare(a.branch, b.branch))
		})
		return c.fail(fault.New(fault.Conflict, "confirmed stream",
			"an attempt ended while fork %q branch %q had no accept or cancel (%d open)", k.fork, k.branch, len(open)))
	}
	clear(c.branches)
	c.pending, c.pendingBytes = 0, 0
	return nil
}

func (c *confirmedStream) emit(env event.Envelope, delta event.StreamDeltaPayload, emit confirmedEmit) {
	c.cursor++
	emit(env.WithHeader(event.HeaderDeliveryCursor, strconv.FormatUint(c.cursor, 10)), delta, c.cursor)
}

func (c *confirmedStream) fail(err error) error {
	c.err = err
	c.branches = nil
	c.pending, c.pendingBytes = 0, 0
	return err
}

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
