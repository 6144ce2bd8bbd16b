package session

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
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
