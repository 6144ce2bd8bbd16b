package checkpoint

import (
	"math"
	"strconv"
	"time"

	"github.com/corral-rt/corral/internal/jsonval"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// The functions of this file write a checkpoint record byte for byte as
// json.Marshal writes an agent.Checkpoint: the fields in declaration
// order, their omitempty and omitzero rules, map keys sorted, strings
// HTML-escaped, raw JSON compacted. Each reports false where it meets what
// it does not write itself (a board value outside jsonval's set, invalid
// raw JSON, a time json cannot write); Encode then calls json.Marshal,
// which writes the value or reports the error. TestRecordKnowsEveryField
// fails when a field is added to one of the structs written here.

// encodeRecord writes the record of cp without json.Marshal, into a new
// slice of its exact length, or reports false. A record is first written
// into a buffer on the stack, 512 bytes, then 8 KiB if it does not fit
// (each try gives up as soon as it overflows); a larger record is measured
// with recordSize and written into a buffer of its size. So every record
// costs one allocation and no more memory than its length.
func encodeRecord(cp *agent.Checkpoint) ([]byte, bool) {
	if data, ok := encodeSmall(cp); ok {
		return data, true
	}
	if data, ok := encodeMedium(cp); ok {
		return data, true
	}
	size, ok := recordSize(cp)
	if !ok {
		return nil, false
	}
	return appendRecord(make([]byte, 0, size), cp, math.MaxInt)
}

func encodeSmall(cp *agent.Checkpoint) ([]byte, bool) {
	var buf [512]byte
	data, ok := appendRecord(buf[:0], cp, len(buf))
	return exactCopy(data, ok)
}

func encodeMedium(cp *agent.Checkpoint) ([]byte, bool) {
	var buf [8 << 10]byte
	data, ok := appendRecord(buf[:0], cp, len(buf))
	return exactCopy(data, ok)
}

func exactCopy(data []byte, ok bool) ([]byte, bool) {
	if !ok {
		return nil, false
	}
	out := make([]byte, len(data))
	copy(out, data)
	return out, true
}

// appendRecord appends the record of cp. It gives up, reporting false,
// once the record grows beyond limit bytes (checked between variables and
// between messages).
func appendRecord(dst []byte, cp *agent.Checkpoint, limit int) ([]byte, bool) {
	dst = append(dst, `{"exec_id":`...)
	dst = jsonval.AppendString(dst, cp.ExecID)
	if len(cp.Steps) > 0 {
		dst = append(dst, `,"steps":`...)
		dst = appendStrings(dst, cp.Steps)
	}
	dst = append(dst, `,"iteration":`...)
	dst = strconv.AppendInt(dst, int64(cp.Iteration), 10)
	dst = append(dst, `,"board":`...)
	dst, ok := appendBoard(dst, cp.Board, limit)
	if !ok {
		return dst, false
	}
	if len(cp.Payload) > 0 {
		dst = append(dst, `,"payload":`...)
		if dst, ok = jsonval.AppendRaw(dst, cp.Payload); !ok {
			return dst, false
		}
	}
	if len(cp.Attributes) > 0 {
		dst = append(dst, `,"attributes":`...)
		dst = jsonval.AppendStringMap(dst, cp.Attributes)
	}
	dst = append(dst, `,"timestamp":`...)
	if dst, ok = appendTime(dst, cp.Timestamp); !ok {
		return dst, false
	}
	if !cp.OriginalStartedAt.IsZero() {
		dst = append(dst, `,"original_started_at":`...)
		if dst, ok = appendTime(dst, cp.OriginalStartedAt); !ok {
			return dst, false
		}
	}
	if cp.SpecVersion != "" {
		dst = append(dst, `,"spec_version":`...)
		dst = jsonval.AppendString(dst, cp.SpecVersion)
	}
	dst = append(dst, '}')
	return dst, len(dst) <= limit
}

func appendStrings(dst []byte, s []string) []byte {
	dst = append(dst, '[')
	for i, e := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonval.AppendString(dst, e)
	}
	return append(dst, ']')
}

// appendTime appends t as time.Time's MarshalJSON writes it, RFC 3339 with
// nanoseconds in quotes; ok is false where MarshalJSON fails: a year
// outside 0..9999 or a zone offset of 24 hours or more.
func appendTime(dst []byte, t time.Time) ([]byte, bool) {
	if t.Location() == time.UTC {
		return appendUTC(dst, t)
	}
	start := len(dst)
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	s := dst[start+1:]
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' {
		return dst[:start], false
	}
	if s[len(s)-1] != 'Z' {
		c := s[len(s)-len("Z07:00")]
		hours := 10*int(s[len(s)-5]-'0') + int(s[len(s)-4]-'0')
		if ('0' <= c && c <= '9') || hours >= 24 {
			return dst[:start], false
		}
	}
	return append(dst, '"'), true
}

// appendUTC is appendTime for a time in UTC, written without the
// general layout machinery: 2006-01-02T15:04:05.999999999Z, the fraction
// without its trailing zeros and without its dot when it is zero.
func appendUTC(dst []byte, t time.Time) ([]byte, bool) {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return dst, false
	}
	hour, minute, sec := t.Clock()
	dst = append(dst, '"', byte('0'+year/1000), byte('0'+year/100%10))
	dst = appendTwoDigits(dst, year%100, 0)
	dst = appendTwoDigits(dst, int(month), '-')
	dst = appendTwoDigits(dst, day, '-')
	dst = appendTwoDigits(dst, hour, 'T')
	dst = appendTwoDigits(dst, minute, ':')
	dst = appendTwoDigits(dst, sec, ':')
	if ns := t.Nanosecond(); ns != 0 {
		var digits [9]byte
		for i := len(digits) - 1; i >= 0; i-- {
			digits[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(digits)
		for digits[n-1] == '0' {
			n--
		}
		dst = append(dst, '.')
		dst = append(dst, digits[:n]...)
	}
	return append(dst, 'Z', '"'), true
}

// appendTwoDigits appends sep (unless it is 0) and n, 0 <= n < 100, in
// two digits.
func appendTwoDigits(dst []byte, n int, sep byte) []byte {
	if sep != 0 {
		dst = append(dst, sep)
	}
	return append(dst, byte('0'+n/10), byte('0'+n%10))
}

// appendBoard appends b as {"vars":…,"channels":…}, or null.
func appendBoard(dst []byte, b *agent.Board, limit int) ([]byte, bool) {
	if b == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, `{"vars":`...)
	dst, ok := jsonval.AppendUpTo(dst, b.Vars, limit)
	if !ok {
		return dst, false
	}
	dst = append(dst, `,"channels":`...)
	switch {
	case b.Channels == nil:
		return append(dst, "null}"...), true
	case len(b.Channels) == 0:
		return append(dst, "{}}"...), true
	}
	var buf [8]string
	dst = append(dst, '{')
	for i, name := range jsonval.SortedKeys(buf[:0], b.Channels) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonval.AppendString(dst, name)
		dst = append(dst, ':')
		if dst, ok = appendMessages(dst, b.Channels[name], limit); !ok {
			return dst, false
		}
	}
	return append(dst, "}}"...), true
}

func appendMessages(dst []byte, msgs []message.Message, limit int) ([]byte, bool) {
	if msgs == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '[')
	for i := range msgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if len(dst)+messageTextLen(&msgs[i]) > limit { // give up before a long message grows dst
			return dst, false
		}
		var ok bool
		if dst, ok = appendMessage(dst, &msgs[i]); !ok || len(dst) > limit {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// messageTextLen is about the length of the texts of m, less than its
// JSON: a guess for giving up early, before a long message grows a stack
// buffer. (A wrong guess costs time, never correctness: the next try
// writes the whole record again.)
func messageTextLen(m *message.Message) int {
	n := len(m.Role) + len(m.Name)
	for i := range m.Parts {
		p := &m.Parts[i]
		n += len(p.Text) + len(p.Data)/2 + len(p.MimeType) // compacting may halve data
		if p.ToolCall != nil {
			n += len(p.ToolCall.Arguments)
		}
		if p.ToolResult != nil {
			n += len(p.ToolResult.Content)
		}
	}
	return n
}

func appendMessage(dst []byte, m *message.Message) ([]byte, bool) {
	dst = append(dst, `{"role":`...)
	dst = jsonval.AppendString(dst, string(m.Role))
	dst = append(dst, `,"parts":`...)
	if m.Parts == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range m.Parts {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendPart(dst, &m.Parts[i]); !ok {
				return dst, false
			}
		}
		dst = append(dst, ']')
	}
	if m.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = jsonval.AppendString(dst, m.Name)
	}
	if len(m.Metadata) > 0 {
		dst = append(dst, `,"metadata":`...)
		dst = jsonval.AppendStringMap(dst, m.Metadata)
	}
	return append(dst, '}'), true
}

func appendPart(dst []byte, p *message.Part) ([]byte, bool) {
	dst = append(dst, `{"type":`...)
	dst = jsonval.AppendString(dst, string(p.Type))
	if p.Text != "" {
		dst = append(dst, `,"text":`...)
		dst = jsonval.AppendString(dst, p.Text)
	}
	if len(p.Data) > 0 {
		dst = append(dst, `,"data":`...)
		var ok bool
		if dst, ok = jsonval.AppendRaw(dst, p.Data); !ok {
			return dst, false
		}
	}
	if p.MimeType != "" {
		dst = append(dst, `,"mime_type":`...)
		dst = jsonval.AppendString(dst, p.MimeType)
	}
	if tc := p.ToolCall; tc != nil {
		dst = append(dst, `,"tool_call":{"id":`...)
		dst = jsonval.AppendString(dst, tc.ID)
		dst = append(dst, `,"name":`...)
		dst = jsonval.AppendString(dst, tc.Name)
		if tc.Arguments != "" {
			dst = append(dst, `,"arguments":`...)
			dst = jsonval.AppendString(dst, tc.Arguments)
		}
		dst = append(dst, '}')
	}
	if tr := p.ToolResult; tr != nil {
		dst = append(dst, `,"tool_result":{"tool_call_id":`...)
		dst = jsonval.AppendString(dst, tr.ToolCallID)
		dst = append(dst, `,"content":`...)
		dst = jsonval.AppendString(dst, tr.Content)
		if tr.IsError {
			dst = append(dst, `,"is_error":true`...)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), true
}
