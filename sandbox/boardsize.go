package sandbox

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/corral-rt/corral/runtime/agent"
)

// JSONBytes is the size of v as encoding/json writes it (the measure of
// max_value_bytes and max_board_bytes). JSON values (maps of string keys,
// slices of any, strings, float64s, bools, nil) are measured without
// being encoded; anything else is encoded, and an error is the encoder's.
func JSONBytes(v any) (int64, error) {
	if n, ok := jsonSize(v); ok {
		return n, nil
	}
	var size byteCounter
	if err := json.NewEncoder(&size).Encode(v); err != nil {
		return 0, err
	}
	return int64(size) - 1, nil // less the newline Encode ends with
}

// byteCounter is an io.Writer that counts what it is given.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
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
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f':
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

// BoardJSONBytes is the size of the board's vars and channels as JSON,
// {"vars":...,"channels":...}: what max_board_bytes bounds.
func BoardJSONBytes(b *agent.Board) (int64, error) {
	channels := int64(4) // null
	if b.Channels != nil {
		channels = 2
		if len(b.Channels) > 0 {
			n, err := JSONBytes(b.Channels)
			if err != nil {
				return 0, err
			}
			channels = n
		}
	}
	vars := int64(4)
	if b.Vars != nil {
		n, err := JSONBytes(b.Vars)
		if err != nil {
			return 0, err
		}
		vars = n
	}
	return int64(len(`{"vars":,"channels":}`)) + vars + channels, nil
}
