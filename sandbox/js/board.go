package js

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
)

// growBoard accounts for a board write that adds add bytes and removes
// remove bytes of the board's JSON, and stops the call with a
// max_board_bytes LimitError when the board would pass the limit; the
// write must not happen then. The first write of a call measures the
// board as the call found it.
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

// jsonBytes is the size of v as encoding/json writes it; 0 when it has
// none. JSON values (maps of string keys, slices of any, strings,
// float64s, bools, nil) are measured without being encoded.
func jsonBytes(v any) int64 {
	if n, ok := jsonSize(v); ok {
		return n
	}
	data, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return int64(len(data))
}

// jsonSize measures the JSON values jsonBytes knows; ok is false for any
// other value inside v.
func jsonSize(v any) (int64, bool) {
	switch x := v.(type) {
	case nil:
		return 4, true
	case bool:
		if x {
			return 4, true
		}
		return 5, true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		var buf [32]byte
		b := strconv.AppendFloat(buf[:0], x, floatFormat(x), -1, 64)
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			return int64(n - 1), true // written e-7, not e-07
		}
		return int64(len(b)), true
	case string:
		return stringSize(x), true
	case []any:
		n := int64(2 + max(len(x)-1, 0))
		for _, e := range x {
			m, ok := jsonSize(e)
			if !ok {
				return 0, false
			}
			n += m
		}
		return n, true
	case map[string]any:
		if x == nil {
			return 4, true
		}
		n := int64(2 + max(len(x)-1, 0))
		for k, e := range x {
			m, ok := jsonSize(e)
			if !ok {
				return 0, false
			}
			n += stringSize(k) + 1 + m
		}
		return n, true
	}
	return 0, false
}

// floatFormat is the format encoding/json writes x in.
func floatFormat(x float64) byte {
	if abs := math.Abs(x); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return 'e'
	}
	return 'f'
}

// stringSize is the size of s as a JSON string written by encoding/json
// (which escapes <, > and &, and writes invalid UTF-8 as \ufffd).
func stringSize(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += int64(size)
		}
		i += size
	}
	return n
}

// boardJSONBytes is the size of the board's vars and channels as JSON:
// {"vars":...,"channels":...}.
func boardJSONBytes(b *agent.Board) int64 {
	channels := int64(4)
	if b.Channels != nil {
		channels = 2
		if len(b.Channels) > 0 {
			channels = jsonBytes(b.Channels)
		}
	}
	vars := int64(4)
	if b.Vars != nil {
		vars = jsonBytes(b.Vars)
	}
	return 8 + vars + 12 + channels + 1
}
