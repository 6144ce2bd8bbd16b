package sandbox

import (
	"github.com/corral-rt/corral/internal/jsonval"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// BoardMeter keeps a board's size as BoardJSONBytes measures it through
// the writes a runner makes on behalf of a script, so that a write is
// checked against max_board_bytes without measuring the whole board, and
// the caller learns the size after the call (Invocation.BoardBytesAfter)
// without measuring it either.
//
// Each write is measured before it is made: the runner asks what the size
// would be (SetVar, DeleteVar, SetChannel, AppendChannel), refuses the
// write when that is past its limit, and otherwise makes the write and
// Commits the size. The size is exact — the same number BoardJSONBytes
// would give — as long as every change of the board goes through the
// meter and every value measures; a value that does not (a Go value of
// another node that encoding/json refuses) makes it an estimate, which
// Exact reports, and an estimate is never handed on.
//
// The zero BoardMeter knows nothing; Reset starts it for a call.
type BoardMeter struct {
	size  int64
	known bool // size was measured, or handed in, or counted from such
	exact bool // and every step since was exact
}

// Reset starts the meter for a call on a board of start bytes, as the
// caller measured it (Invocation.BoardBytes), or 0 when unknown: the size
// is then measured at the first write.
func (m *BoardMeter) Reset(start int64) {
	*m = BoardMeter{}
	if start > 0 {
		m.size, m.known, m.exact = start, true, true
	}
}

// Exact returns the board's size and true when the meter holds it
// exactly; 0 and false when it was never measured or is an estimate.
func (m *BoardMeter) Exact() (int64, bool) {
	if !m.known || !m.exact {
		return 0, false
	}
	return m.size, true
}

// Commit records after, a size SetVar, DeleteVar, SetChannel or
// AppendChannel returned, once the write is made.
func (m *BoardMeter) Commit(after int64) { m.size = after }

// current returns the size before a write, measuring b when the meter
// does not know it.
func (m *BoardMeter) current(b *agent.Board) int64 {
	if !m.known {
		n, err := BoardJSONBytes(b)
		m.size, m.known, m.exact = n, true, err == nil
	}
	return m.size
}

// measure is the JSON size of v; a value that does not measure counts as
// 0 and makes the meter an estimate.
func (m *BoardMeter) measure(v any) int64 {
	n, err := JSONBytes(v)
	if err != nil {
		m.exact = false
		return 0
	}
	return n
}

// member is the size of "name":value in an object whose value is n bytes.
func member(name string, n int64) int64 { return jsonval.StringSize(name) + 1 + n }

// comma is the comma a member added to an object of n members needs, or
// the one a member removed from it takes along.
func comma(n int) int64 {
	if n > 0 {
		return 1
	}
	return 0
}

// SetVar returns the size b will have once Vars[name] is v.
func (m *BoardMeter) SetVar(b *agent.Board, name string, v any) int64 {
	size := m.current(b)
	n := m.measure(v)
	switch old, had := b.Vars[name]; {
	case had:
		return size + n - m.measure(old)
	case b.Vars == nil: // null becomes {...}
		return size - 4 + 2 + member(name, n)
	default:
		return size + member(name, n) + comma(len(b.Vars))
	}
}

// DeleteVar returns the size b will have once Vars[name] is deleted.
func (m *BoardMeter) DeleteVar(b *agent.Board, name string) int64 {
	size := m.current(b)
	old, had := b.Vars[name]
	if !had {
		return size
	}
	return size - member(name, m.measure(old)) - comma(len(b.Vars)-1)
}

// SetChannel returns the size b will have once Channels[name] is msgs.
func (m *BoardMeter) SetChannel(b *agent.Board, name string, msgs []message.Message) int64 {
	size := m.current(b)
	n := m.measure(msgs)
	switch old, had := b.Channels[name]; {
	case had:
		return size + n - m.measure(old)
	case b.Channels == nil:
		return size - 4 + 2 + member(name, n)
	default:
		return size + member(name, n) + comma(len(b.Channels))
	}
}

// AppendChannel returns the size b will have once msgs are appended to
// Channels[name] (agent.Board.Append). Appending nothing changes nothing
// (and the runner must then not call Append, which would add an empty
// channel).
func (m *BoardMeter) AppendChannel(b *agent.Board, name string, msgs []message.Message) int64 {
	size := m.current(b)
	if len(msgs) == 0 {
		return size
	}
	old, had := b.Channels[name]
	if !had || len(old) == 0 {
		return m.SetChannel(b, name, msgs)
	}
	// The new elements with a comma each: their array's size less its
	// brackets plus the comma after the old last element.
	return size + m.measure(msgs) - 2 + 1
}
