package checkpoint

import (
	"math"
	"strconv"

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
// (each try gives up as soon as it overflows), and copied out; a larger
// record, or any record when measure is set (the caller has made those
// tries), is measured with recordSize and written into a buffer of its
// size. So every record costs one allocation and no more memory than its
// length.
func encodeRecord(cp *agent.Checkpoint, measure bool) ([]byte, bool) {
	if !measure {
		if data, ok := encodeSmall(cp); ok {
			return data, true
		}
		if data, ok := encodeMedium(cp); ok {
			return data, true
		}
	}
	size, ok := recordSize(cp)
	if !ok {
		return nil, false
	}
	return appendRecord(make([]byte, 0, size), cp, math.MaxInt)
}

// smallRecord is the size of the stack buffer a record is written into
// first, enough for the records of most wave boundaries.
const smallRecord = 512

func encodeSmall(cp *agent.Checkpoint) ([]byte, bool) {
	var buf [smallRecord]byte
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
	if len(b.Channels) == 1 { // nothing to sort
		for name, msgs := range b.Channels {
			dst = append(dst, '{')
			dst = jsonval.AppendString(dst, name)
			dst = append(dst, ':')
			if dst, ok = appendMessages(dst, msgs, limit); !ok {
				return dst, false
			}
			break // the only channel: spares the iterator's search for another
		}
		return append(dst, "}}"...), true
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

// messageTextLen is about the length of m's JSON, and not more where no
// part holds data: its texts and the fixed text around them, a guess for
// giving up early, before a long message grows a stack buffer. (A wrong
// guess costs time, never correctness: the next try writes the whole
// record again.)
func messageTextLen(m *message.Message) int {
	n := len(`{"role":"","parts":[]}`) + len(m.Role)
	if m.Name != "" {
		n += len(`,"name":""`) + len(m.Name)
	}
	for i := range m.Parts {
		p := &m.Parts[i]
		n += len(`{"type":""}`) + len(p.Type) + len(p.Data)/2 + len(p.MimeType) // compacting may halve data
		if p.Text != "" {
			n += len(`,"text":""`) + len(p.Text)
		}
		if tc := p.ToolCall; tc != nil {
			n += len(`,"tool_call":{"id":"","name":""}`) + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
		if tr := p.ToolResult; tr != nil {
			n += len(`,"tool_result":{"tool_call_id":"","content":""}`) + len(tr.ToolCallID) + len(tr.Content)
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
