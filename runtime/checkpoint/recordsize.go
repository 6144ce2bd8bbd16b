package checkpoint

import (
	"strconv"

	"github.com/corral-rt/corral/internal/jsonval"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// recordSize is len(appendRecord(nil, cp)), computed without building the
// record, so that a large record is written into a buffer of its exact
// size; ok is false exactly when appendRecord reports false.
func recordSize(cp *agent.Checkpoint) (int64, bool) {
	n := int64(len(`{"exec_id":,"iteration":,"board":,"timestamp":}`)) + jsonval.StringSize(cp.ExecID)
	if len(cp.Steps) > 0 {
		size, _ := jsonval.Size(cp.Steps)
		n += int64(len(`,"steps":`)) + size
	}
	var digits [20]byte
	n += int64(len(strconv.AppendInt(digits[:0], int64(cp.Iteration), 10)))
	board, ok := boardSize(cp.Board)
	if !ok {
		return 0, false
	}
	n += board
	if len(cp.Payload) > 0 {
		size, ok := jsonval.RawSize(cp.Payload)
		if !ok {
			return 0, false
		}
		n += int64(len(`,"payload":`)) + size
	}
	if len(cp.Attributes) > 0 {
		n += int64(len(`,"attributes":`)) + jsonval.StringMapSize(cp.Attributes)
	}
	var stamp [64]byte
	b, ok := appendTime(stamp[:0], cp.Timestamp)
	if !ok {
		return 0, false
	}
	n += int64(len(b))
	if !cp.OriginalStartedAt.IsZero() {
		if b, ok = appendTime(stamp[:0], cp.OriginalStartedAt); !ok {
			return 0, false
		}
		n += int64(len(`,"original_started_at":`) + len(b))
	}
	if cp.SpecVersion != "" {
		n += int64(len(`,"spec_version":`)) + jsonval.StringSize(cp.SpecVersion)
	}
	return n, true
}

func boardSize(b *agent.Board) (int64, bool) {
	if b == nil {
		return 4, true
	}
	n := int64(len(`{"vars":,"channels":}`))
	vars, ok := jsonval.Size(b.Vars)
	if !ok {
		return 0, false
	}
	n += vars
	if b.Channels == nil {
		return n + 4, true
	}
	n += int64(2 + max(len(b.Channels)-1, 0)) // braces and commas
	for name, msgs := range b.Channels {
		n += jsonval.StringSize(name) + 1
		if msgs == nil {
			n += 4
			continue
		}
		n += int64(2 + max(len(msgs)-1, 0))
		for i := range msgs {
			size, ok := messageSize(&msgs[i])
			if !ok {
				return 0, false
			}
			n += size
		}
	}
	return n, true
}

func messageSize(m *message.Message) (int64, bool) {
	n := int64(len(`{"role":,"parts":}`)) + jsonval.StringSize(string(m.Role))
	if m.Parts == nil {
		n += 4
	} else {
		n += int64(2 + max(len(m.Parts)-1, 0))
		for i := range m.Parts {
			size, ok := partSize(&m.Parts[i])
			if !ok {
				return 0, false
			}
			n += size
		}
	}
	if m.Name != "" {
		n += int64(len(`,"name":`)) + jsonval.StringSize(m.Name)
	}
	if len(m.Metadata) > 0 {
		n += int64(len(`,"metadata":`)) + jsonval.StringMapSize(m.Metadata)
	}
	return n, true
}

func partSize(p *message.Part) (int64, bool) {
	n := int64(len(`{"type":}`)) + jsonval.StringSize(string(p.Type))
	if p.Text != "" {
		n += int64(len(`,"text":`)) + jsonval.StringSize(p.Text)
	}
	if len(p.Data) > 0 {
		size, ok := jsonval.RawSize(p.Data)
		if !ok {
			return 0, false
		}
		n += int64(len(`,"data":`)) + size
	}
	if p.MimeType != "" {
		n += int64(len(`,"mime_type":`)) + jsonval.StringSize(p.MimeType)
	}
	if tc := p.ToolCall; tc != nil {
		n += int64(len(`,"tool_call":{"id":,"name":}`)) + jsonval.StringSize(tc.ID) + jsonval.StringSize(tc.Name)
		if tc.Arguments != "" {
			n += int64(len(`,"arguments":`)) + jsonval.StringSize(tc.Arguments)
		}
	}
	if tr := p.ToolResult; tr != nil {
		n += int64(len(`,"tool_result":{"tool_call_id":,"content":}`)) +
			jsonval.StringSize(tr.ToolCallID) + jsonval.StringSize(tr.Content)
		if tr.IsError {
			n += int64(len(`,"is_error":true`))
		}
	}
	return n, true
}
