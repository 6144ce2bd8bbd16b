package checkpoint

import (
	"github.com/corral-rt/corral/runtime/agent"
)

// Policy says when a save stores a whole snapshot rather than a delta.
// The zero value is DefaultPolicy.
type Policy struct {
	// MaxDeltas is the number of deltas after a snapshot past which the
	// next save is a snapshot; 0 means 4096.
	MaxDeltas int
	// MinDeltaBytes is the least total size of the deltas after a snapshot
	// that makes the next save a snapshot; 0 means 64 KiB. The deltas may
	// grow to four times the snapshot's size when that is more.
	MinDeltaBytes int64
}

// DefaultPolicy is the policy of the package's stores: a snapshot after
// 4,096 deltas, or once the deltas since the snapshot total four times its
// size and at least 64 KiB. So a load reads at most about five times the
// board, and a save of a small change on a large board pays for the
// snapshot a few thousand saves at a time: the cost of a save follows what
// it changed.
var DefaultPolicy = Policy{MaxDeltas: 4096, MinDeltaBytes: 64 << 10}

func (p Policy) maxDeltas() int {
	if p.MaxDeltas <= 0 {
		return DefaultPolicy.MaxDeltas
	}
	return p.MaxDeltas
}

func (p Policy) deltaBytes(snapshot int64) int64 {
	min := p.MinDeltaBytes
	if min <= 0 {
		min = DefaultPolicy.MinDeltaBytes
	}
	return max(min, 4*snapshot)
}

// Chain is what a store remembers of one exec id's entries to choose the
// next one: the newest entry's Seq, which writer's checkpoint it holds
// (agent.BoardChanges) and what the deltas since the last snapshot
// amount to. A store keeps one Chain per exec id and calls Next, then,
// once the entry is stored, Commit; when storing fails, Lost. Any store
// (a log, a database, a message stream) can keep its records this way
// and Fold them back. A Chain is not safe for concurrent use; the zero
// value starts an exec id with no entries under DefaultPolicy.
type Chain struct {
	Policy Policy

	seq        uint64 // the newest entry's, 0 for none
	writer     uint64 // the BoardChanges of the newest entry; 0 when unknown
	writerSeq  uint64
	snapshot   int64 // the last snapshot's size
	deltas     int   // deltas since the last snapshot
	deltaBytes int64
	// chans are the lengths of the channels in the newest entry's board:
	// changes claiming a channel's new messages start past its end there
	// (a writer that miscounted) would make a delta that cannot fold.
	chans map[string]int
}

// ResumeChain returns the Chain of an exec id whose newest stored entry
// has Seq seq: its next entry is a snapshot numbered after it.
func ResumeChain(p Policy, seq uint64) Chain { return Chain{Policy: p, seq: seq} }

// Seq returns the Seq of the newest entry, 0 when there is none.
func (c *Chain) Seq() uint64 { return c.seq }

// Next validates cp and returns the entry that stores it after the
// chain's newest: a delta when cp.Changes follow the checkpoint the newest
// entry holds and the policy allows one, else a snapshot. It does not
// change the chain. Errors are those of Encode.
func (c *Chain) Next(cp *agent.Checkpoint) (Entry, error) {
	if c.deltaAllowed(cp) {
		plain := plainCheckpoint(cp)
		if !plain {
			if err := validate(cp); err != nil {
				return Entry{}, err
			}
		}
		if data, ok := encodeDelta(cp); ok {
			return Entry{Kind: EntryDelta, Seq: c.seq + 1, Data: data}, nil
		}
	}
	return c.Snapshot(cp)
}

// Snapshot is Next when the store needs a snapshot whatever the policy
// says (a log that must not grow).
func (c *Chain) Snapshot(cp *agent.Checkpoint) (Entry, error) {
	data, err := encode(cp, false)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Kind: EntrySnapshot, Seq: c.seq + 1, Data: data}, nil
}

// deltaAllowed reports whether cp may be stored as a delta.
func (c *Chain) deltaAllowed(cp *agent.Checkpoint) bool {
	ch := cp.Changes
	if ch == nil || cp.Board == nil || ch.Writer == 0 || c.writer != ch.Writer || c.writerSeq != ch.Base || ch.Base == 0 || c.seq == 0 {
		return false
	}
	for name, from := range ch.Channels {
		if _, kept := cp.Board.Channels[name]; kept && from > c.chans[name] {
			return false
		}
	}
	return c.deltas < c.Policy.maxDeltas() && c.deltaBytes < c.Policy.deltaBytes(c.snapshot)
}

// Commit records that e, made by Next from cp, is stored.
func (c *Chain) Commit(e Entry, cp *agent.Checkpoint) {
	c.seq = e.Seq
	c.writer, c.writerSeq = 0, 0
	if ch := cp.Changes; ch != nil && ch.Writer != 0 {
		c.writer, c.writerSeq = ch.Writer, ch.Seq
		// Only a writer's next delta reads them; a map reused, so that a
		// save allocates nothing for them once the channels are known.
		if c.chans == nil {
			c.chans = make(map[string]int, len(cp.Board.Channels))
		}
		clear(c.chans)
		for name, msgs := range cp.Board.Channels {
			c.chans[name] = len(msgs)
		}
	}
	if e.Kind == EntrySnapshot {
		c.snapshot, c.deltas, c.deltaBytes = int64(len(e.Data)), 0, 0
		return
	}
	c.deltas++
	c.deltaBytes += int64(len(e.Data))
}

// Lost records that storing e failed, and may or may not have left it
// stored: the next entry is a snapshot, numbered after e.
func (c *Chain) Lost(e Entry) {
	c.seq = max(c.seq, e.Seq)
	c.writer, c.writerSeq = 0, 0
}

// encodeDelta writes the delta record of cp into a buffer of its length,
// or reports false (appendDelta).
func encodeDelta(cp *agent.Checkpoint) ([]byte, bool) {
	var buf [2 << 10]byte
	data, ok := appendDelta(buf[:0], cp)
	if !ok {
		return nil, false
	}
	return append([]byte(nil), data...), true
}
