package session

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
)

// REF 2.4.8
func FuzzDeliveryCursorFromEnvelope(f *testing.F) {
	for _, s := range []string{"1", "0", "", "-1", "+1", "007", "18446744073709551615", "18446744073709551616", " 1", "1e3"} {
		f.Add(s, true)
	}
	f.Add("", false)
	f.Fuzz(func(t *testing.T, raw string, present bool) {
		env := event.Envelope{Subject: "agent.run.r.end"}
		if present {
			env.Headers = map[string]string{event.HeaderDeliveryCursor: raw}
		}
		got, err := DeliveryCursorFromEnvelope(env)
		want, perr := strconv.ParseUint(raw, 10, 64)
		ok := present && perr == nil && want > 0
		switch {
		case ok && (err != nil || got != want):
			t.Fatalf("%q: got %d, %v; want %d", raw, got, err, want)
		case !ok && (err == nil || got != 0):
			t.Fatalf("%q (present %v): got %d, %v; want a validation error", raw, present, got, err)
		case !ok && fault.KindOf(err) != fault.Validation:
			t.Fatalf("%q: kind %v, want validation", raw, fault.KindOf(err))
		}
	})
}

// FuzzConfirmedStream feeds random sequences of plain, speculative and
// control deltas and attempt ends to the confirmed stream. It never
// panics; cursors run 1, 2, 3...; nothing is emitted after the stream
// died; a held delta is released at most once, only after its branch's
// accept, in input order, and never after a cancel.
//
// REF 2.4.8
// REF 2.4.9
// REF 2.4.10
func FuzzConfirmedStream(f *testing.F) {
	f.Add([]byte{2, 0x01, 2, 0x01, 4, 0x01, 0, 0, 6, 0}, uint8(8), uint16(2047))
	f.Add([]byte{2, 0x01, 3, 0x02, 5, 0x02, 4, 0x01, 2, 0x01}, uint8(8), uint16(2047))
	f.Add([]byte{2, 0xff, 4, 0x11, 5, 0x11, 6, 0}, uint8(2), uint16(64))
	f.Fuzz(func(t *testing.T, ops []byte, maxEvents uint8, maxBytes uint16) {
		c := newConfirmedStream(int(maxEvents)%16+1, int(maxBytes)%2048+1)
		fz := &confirmedFuzz{t: t, released: map[int]bool{}, acceptedAt: map[branchKey]int{}, lastOf: map[branchKey]int{}}
		for i := 0; i+1 < len(ops); i += 2 {
			fz.step(c, i/2, ops[i], ops[i+1])
			if c.pending < 0 || c.pendingBytes < 0 || c.pending > c.maxEvents || c.pendingBytes > c.maxBytes {
				t.Fatalf("counters out of range: %d events, %d bytes", c.pending, c.pendingBytes)
			}
		}
	})
}

type confirmedFuzz struct {
	t          *testing.T
	cursor     uint64
	dead       bool
	released   map[int]bool
	acceptedAt map[branchKey]int // op index of the branch's accept in the current attempt
	cancelled  map[branchKey]bool
	lastOf     map[branchKey]int // last released input index per branch
	now        int
}

func (fz *confirmedFuzz) emit(env event.Envelope, d event.StreamDeltaPayload, cursor uint64) {
	t := fz.t
	if fz.dead {
		t.Fatalf("emitted %q after the stream died", env.ID)
	}
	fz.cursor++
	if cursor != fz.cursor || env.Header(event.HeaderDeliveryCursor) != strconv.FormatUint(cursor, 10) {
		t.Fatalf("cursor %d (header %q), want %d", cursor, env.Header(event.HeaderDeliveryCursor), fz.cursor)
	}
	if !d.Speculative || d.Type.IsControl() {
		return
	}
	idx, _ := strconv.Atoi(env.ID)
	k := branchKey{d.ForkID, d.BranchID}
	switch at, ok := fz.acceptedAt[k]; {
	case fz.released[idx]:
		t.Fatalf("delta %d released twice", idx)
	case !ok || at != fz.now:
		t.Fatalf("delta %d released without an accept of its branch", idx)
	case fz.cancelled[k]:
		t.Fatalf("delta %d of a cancelled branch released", idx)
	case idx <= fz.lastOf[k] && fz.lastOf[k] != 0:
		t.Fatalf("delta %d released after %d: not input order", idx, fz.lastOf[k])
	}
	fz.released[idx], fz.lastOf[k] = true, idx
}

// step runs one operation: op selects the kind, arg the fork and branch.
func (fz *confirmedFuzz) step(c *confirmedStream, i int, op, arg byte) {
	if fz.cancelled == nil {
		fz.cancelled = map[branchKey]bool{}
	}
	fz.now = i
	fork, branch := fmt.Sprintf("f%d", arg>>4&1), fmt.Sprintf("b%d", arg&3)
	if arg == 0xff {
		fork = ""
	}
	env := event.Envelope{ID: strconv.Itoa(i + 1), Subject: "agent.run.r.stream.a.delta", Payload: make([]byte, int(arg)%97)}
	var d event.StreamDeltaPayload
	var err error
	switch op % 7 {
	case 0, 1:
		d = textDelta("plain")
	case 2, 3:
		d = specDelta(fork, branch, "spec")
	case 4:
		d = control(event.DeltaParallelBranchAccept, fork, branch)
		if _, seen := fz.acceptedAt[branchKey{fork, branch}]; !seen && !fz.cancelled[branchKey{fork, branch}] {
			fz.acceptedAt[branchKey{fork, branch}] = i
		}
	case 5:
		d = control(event.DeltaParallelBranchCancel, fork, branch)
		if _, acc := fz.acceptedAt[branchKey{fork, branch}]; !acc {
			fz.cancelled[branchKey{fork, branch}] = true
		}
	case 6:
		err = c.endAttempt()
		clear(fz.acceptedAt)
		clear(fz.cancelled)
		clear(fz.lastOf)
	}
	if op%7 != 6 {
		before := fz.cursor
		err = c.offer(env, d, fz.emit)
		if !d.Speculative && !d.Type.IsControl() && !fz.dead && fz.cursor != before+1 {
			fz.t.Fatalf("plain delta %d was not emitted at once", i+1)
		}
	}
	if err != nil {
		if fz.dead {
			fz.t.Fatalf("the stream died twice: %v", err)
		}
		fz.dead = true
		if !c.dead() {
			fz.t.Fatalf("offer returned %v but the stream is alive", err)
		}
	}
}
