package hostabi

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// The emit types with a mapping of their own (REF 5.4); the delta
// types part, finish and provider_outputs are event.Delta* constants.
const (
	EmitToken      = "token"       // payload: a non-empty string → a text part
	EmitToolCall   = "tool_call"   // payload: {id, name, arguments?} → a tool_call part
	EmitToolResult = "tool_result" // payload: {tool_call_id, content?, is_error?} → a tool_result part
)

// EmitDelta maps host.emit(typ, payload) to a stream delta (REF 5.4):
//
//   - token: a non-empty string → a "part" delta with a text part (an
//     empty text, from token or part, is refused rather than published
//     empty);
//   - tool_call: {id, name, arguments?} → a "part" delta with a tool_call
//     part (arguments is a JSON text, or any other JSON value, which is
//     encoded); id and name are required;
//   - tool_result: {tool_call_id, content?, is_error?} → a "part" delta with
//     a tool_result part (content is a string, or any other JSON value,
//     which is encoded); tool_call_id is required;
//   - part: a canonical message part → a "part" delta;
//   - finish: {finish_reason, reason?, request_id?, response_id?} → a
//     "finish" delta; finish_reason is required;
//   - provider_outputs: a non-empty array of {provider, extension, value?}
//     → a "provider_outputs" delta;
//   - parallel_branch_accept and parallel_branch_cancel are the engine's:
//     refused;
//   - anything else → a delta of that type with the raw payload (none for
//     null).
//
// Objects are decoded strictly (unknown fields are errors). A payload of the
// wrong shape for its type is a Validation error: the dispatcher skips such
// a delta instead of publishing it empty.
func EmitDelta(typ string, payload json.RawMessage) (event.StreamDeltaPayload, error) {
	bad := func(err error, format string, args ...any) (event.StreamDeltaPayload, error) {
		if err != nil {
			return event.StreamDeltaPayload{}, fault.Wrap(fault.Validation, err, "host emit", format, args...)
		}
		return event.StreamDeltaPayload{}, fault.New(fault.Validation, "host emit", format, args...)
	}
	if typ == "" {
		return bad(nil, "type is required")
	}
	if len(bytes.TrimSpace(payload)) == 0 {
		payload = json.RawMessage("null")
	}
	switch t := event.DeltaType(typ); t {
	case EmitToken, EmitToolCall, EmitToolResult, event.DeltaPart:
		part, err := emitPart(typ, payload)
		if err != nil {
			return bad(err, "a %q payload", typ)
		}
		return event.StreamDeltaPayload{Type: event.DeltaPart, Part: &part}, nil
	case event.DeltaFinish:
		return emitFinish(payload)
	case event.DeltaProviderOutputs:
		return emitProviderOutputs(payload)
	case event.DeltaParallelBranchAccept, event.DeltaParallelBranchCancel:
		return bad(nil, "type %q is reserved to the engine", typ)
	default:
		d := event.StreamDeltaPayload{Type: t}
		if !isNull(payload) {
			if !json.Valid(payload) {
				return bad(nil, "a %q payload is not a JSON value", abbreviate(typ))
			}
			d.Payload = bytes.Clone(bytes.TrimSpace(payload))
		}
		return d, nil
	}
}

// emitPart builds the part of a token, tool_call, tool_result or part
// payload and validates it.
func emitPart(typ string, payload json.RawMessage) (message.Part, error) {
	var (
		part message.Part
		role = message.RoleAssistant
		err  error
	)
	switch typ {
	case EmitToken:
		var s string
		err = decodeNonNull(payload, &s)
		part = message.TextPart(s)
	case EmitToolCall:
		var tc struct {
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		err = decodeNonNull(payload, &tc)
		part = message.ToolCallPart(tc.ID, tc.Name, jsonText(tc.Arguments))
	case EmitToolResult:
		var tr struct {
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
			IsError    bool            `json:"is_error"`
		}
		err = decodeNonNull(payload, &tr)
		part, role = message.ToolResultPart(tr.ToolCallID, jsonText(tr.Content), tr.IsError), message.RoleTool
	default: // part
		err = decodeNonNull(payload, &part)
		if part.Type == message.PartToolResult {
			role = message.RoleTool
		}
	}
	if err == nil && part.Type == message.PartText && part.Text == "" {
		err = fault.New(fault.Validation, "", "an empty text delta")
	}
	if err != nil {
		return message.Part{}, err
	}
	if err := (message.Message{Role: role, Parts: []message.Part{part}}).Validate(); err != nil {
		return message.Part{}, err
	}
	return part, nil
}

// jsonText returns a JSON string's value, or the compact text of any other
// JSON value ("" for none or null).
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

func emitFinish(payload json.RawMessage) (event.StreamDeltaPayload, error) {
	var f struct {
		FinishReason string `json:"finish_reason"`
		Reason       string `json:"reason"`
		RequestID    string `json:"request_id"`
		ResponseID   string `json:"response_id"`
	}
	if err := decodeNonNull(payload, &f); err != nil {
		return event.StreamDeltaPayload{}, fault.Wrap(fault.Validation, err, "host emit", "a %q payload", event.DeltaFinish)
	}
	if strings.TrimSpace(f.FinishReason) == "" {
		return event.StreamDeltaPayload{}, fault.New(fault.Validation, "host emit", "a %q payload needs finish_reason", event.DeltaFinish)
	}
	return event.StreamDeltaPayload{Type: event.DeltaFinish, FinishReason: f.FinishReason, Reason: f.Reason,
		RequestID: f.RequestID, ResponseID: f.ResponseID}, nil
}

func emitProviderOutputs(payload json.RawMessage) (event.StreamDeltaPayload, error) {
	var outs []event.ProviderOutput
	if err := decodeNonNull(payload, &outs); err != nil {
		return event.StreamDeltaPayload{}, fault.Wrap(fault.Validation, err, "host emit", "a %q payload", event.DeltaProviderOutputs)
	}
	if len(outs) == 0 {
		return event.StreamDeltaPayload{}, fault.New(fault.Validation, "host emit", "a %q payload must be a non-empty array", event.DeltaProviderOutputs)
	}
	for i, o := range outs {
		if o.Provider == "" {
			return event.StreamDeltaPayload{}, fault.New(fault.Validation, "host emit", "provider_outputs[%d].provider is required", i)
		}
		outs[i].Value = bytes.Clone(o.Value)
	}
	return event.StreamDeltaPayload{Type: event.DeltaProviderOutputs, ProviderOutputs: outs}, nil
}

// decodeNonNull decodes payload strictly into out; null is refused.
func decodeNonNull(payload json.RawMessage, out any) error {
	if isNull(payload) {
		return fault.New(fault.Validation, "", "payload is null")
	}
	return decodeStrict(payload, out)
}
