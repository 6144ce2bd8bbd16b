package js

import (
	"math"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
)

// growBoard accounts for a board write that adds add bytes and removes
// remove bytes of the board's JSON, and stops the call with a
// max_board_bytes LimitError when the board would pass the limit; the
// write must not happen then. The count starts from the board's size the
// invocation gives (sandbox.Invocation.BoardBytes), else the first write of
// a call measures the board as the call found it.
func (c *call) growBoard(b *agent.Board, add, remove int64) {
	if c.limits.MaxBoardBytes <= 0 {
		return
	}
	if !c.boardSized {
		c.boardBytes, c.boardSized = boardJSONBytes(b), true
	}
	n := c.boardBytes + add - remove
	if n > c.limits.MaxBoardBytes {
		c.abort(c.limitError(sandbox.LimitBoardBytes))
	}
	c.boardBytes = n
}

// replaced is the JSON size of the entry name:old a write replaces; 0 when
// there was none.
func replaced(name string, had bool, old any) int64 {
	if !had {
		return 0
	}
	return entryBytes(name, jsonBytes(old))
}

// entryBytes estimates the JSON size of the map entry "name":value whose
// value is n bytes: the quoted name, the colon and the comma.
func entryBytes(name string, n int64) int64 { return int64(len(name)) + 4 + n }

// jsonBytes is the size of v as JSON; 0 when it has none.
func jsonBytes(v any) int64 {
	if f, ok := v.(float64); ok {
		if n, ok := intJSONBytes(f); ok {
			return n
		}
	}
	n, err := sandbox.JSONBytes(v)
	if err != nil {
		return 0
	}
	return n
}

// boardJSONBytes is the size of the board's vars and channels as JSON.
func boardJSONBytes(b *agent.Board) int64 {
	n, err := sandbox.BoardJSONBytes(b)
	if err != nil {
		return 0
	}
	return n
}

// maxExactInt bounds the integers intJSONBytes measures: below it a float64
// holds every integer exactly.
const maxExactInt = 1 << 53

// intJSONBytes is the JSON size of f when f is an integer of magnitude
// below maxExactInt (not -0): its decimal digits and sign, as
// encoding/json writes it. ok is false for any other number.
func intJSONBytes(f float64) (int64, bool) {
	if f != math.Trunc(f) || f <= -maxExactInt || f >= maxExactInt || (f == 0 && math.Signbit(f)) {
		return 0, false
	}
	return decimalLen(int64(f)), true
}

// decimalLen is the length of x in decimal, its sign included: the
// length of strconv.FormatInt(x, 10), without making the text.
func decimalLen(x int64) int64 {
	n, u := int64(1), uint64(x)
	if x < 0 {
		n, u = 2, -u
	}
	for ; u >= 10; u /= 10 {
		n++
	}
	return n
}
