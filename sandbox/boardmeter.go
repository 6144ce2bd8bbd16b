package sandbox

import (
	"github.com/corral-rt/corral/internal/jsonval"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// boardState is what the meter reads of a board: a real one (realBoard)
// or a call's view of one (BoardView).
type boardState interface {
	lookupVar(name string) (any, bool)
	lenVars() int
	nullVars() bool // the vars encode as null
	lookupChannel(name string) ([]message.Message, bool)
	lenChannels() int
	nullChannels() bool
	jsonBytes() (int64, error) // BoardJSONBytes of the whole board
}

// realBoard is an *agent.Board as a boardState.
type realBoard struct{ b *agent.Board }

func (r realBoard) lookupVar(name string) (any, bool) { v, ok := r.b.Vars[name]; return v, ok }
func (r realBoard) lenVars() int                      { return len(r.b.Vars) }
func (r realBoard) nullVars() bool                    { return r.b.Vars == nil }
func (r realBoard) lookupChannel(name string) ([]message.Message, bool) {
	m, ok := r.b.Channels[name]
	return m, ok
}
func (r realBoard) lenChannels() int          { return len(r.b.Channels) }
func (r realBoard) nullChannels() bool        { return r.b.Channels == nil }
func (r realBoard) jsonBytes() (int64, error) { return BoardJSONBytes(r.b) }

// meter keeps a board's size as BoardJSONBytes measures it through a
// sequence of writes, so that a write is checked against max_board_bytes
// without measuring the whole board. Each write is measured before it is
// made: the caller asks what the size would be (setVar, deleteVar,
// setChannel, appendChannel), refuses the write when that is past its
// limit, and otherwise makes the write and commits the size.
//
// The size is exact — the same number BoardJSONBytes would give — as long
// as every change of the board goes through the meter and every value
// measures; a value that does not (a Go value of another node that
// encoding/json refuses) makes it an estimate, which exact reports.
type meter struct {
	size  int64
	known bool // size was measured, or handed in, or counted from such
	exact bool // and every step since was exact
}

// reset starts the meter on a board of start bytes, or 0 when unknown:
// the size is then measured at the first write.
func (m *meter) reset(start int64) {
	*m = meter{}
	if start > 0 {
		m.size, m.known, m.exact = start, true, true
	}
}

// exactSize returns the board's size and true when the meter holds it
// exactly; 0 and false when it was never measured or is an estimate.
func (m *meter) exactSize() (int64, bool) {
	if !m.known || !m.exact {
		return 0, false
	}
	return m.size, true
}

// current returns the size before a write, measuring b when the meter
// does not know it.
func (m *meter) current(b boardState) int64 {
	if !m.known {
		n, err := b.jsonBytes()
		m.size, m.known, m.exact = n, true, err == nil
	}
	return m.size
}

// measure is the JSON size of v; a value that does not measure counts as
// 0 and makes the meter an estimate.
func (m *meter) measure(v any) int64 {
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

// setVar returns the size b will have once var name is v.
func (m *meter) setVar(b boardState, name string, v any) int64 {
	size := m.current(b)
	n := m.measure(v)
	switch old, had := b.lookupVar(name); {
	case had:
		return size + n - m.measure(old)
	case b.nullVars(): // null becomes {...}
		return size - 4 + 2 + member(name, n)
	default:
		return size + member(name, n) + comma(b.lenVars())
	}
}

// deleteVar returns the size b will have once var name is deleted.
func (m *meter) deleteVar(b boardState, name string) int64 {
	size := m.current(b)
	old, had := b.lookupVar(name)
	if !had {
		return size
	}
	return size - member(name, m.measure(old)) - comma(b.lenVars()-1)
}

// setChannel returns the size b will have once channel name is msgs.
func (m *meter) setChannel(b boardState, name string, msgs []message.Message) int64 {
	size := m.current(b)
	n := m.measure(msgs)
	switch old, had := b.lookupChannel(name); {
	case had:
		return size + n - m.measure(old)
	case b.nullChannels():
		return size - 4 + 2 + member(name, n)
	default:
		return size + member(name, n) + comma(b.lenChannels())
	}
}

// appendChannel returns the size b will have once msgs are appended to
// channel name (agent.Board.Append). Appending nothing changes nothing.
func (m *meter) appendChannel(b boardState, name string, msgs []message.Message) int64 {
	size := m.current(b)
	if len(msgs) == 0 {
		return size
	}
	old, had := b.lookupChannel(name)
	if !had || len(old) == 0 {
		return m.setChannel(b, name, msgs)
	}
	// The new elements with a comma each: their array's size less its
	// brackets plus the comma after the old last element.
	return size + m.measure(msgs) - 2 + 1
}
