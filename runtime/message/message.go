package message

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
)

// Role says who a message is from.
type Role string

// The roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		return true
	}
	return false
}

// PartType says what a part holds.
type PartType string

// The part types.
const (
	PartText       PartType = "text"
	PartData       PartType = "data"
	PartToolCall   PartType = "tool_call"
	PartToolResult PartType = "tool_result"
)

// Message is one entry of a conversation.
type Message struct {
	Role     Role              `json:"role"`
	Parts    []Part            `json:"parts"`
	Name     string            `json:"name,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Part is one piece of a message's content. Exactly the field matching Type
// is set.
type Part struct {
	Type       PartType        `json:"type"`
	Text       string          `json:"text,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	MimeType   string          `json:"mime_type,omitempty"`
	ToolCall   *ToolCall       `json:"tool_call,omitempty"`
	ToolResult *ToolResult     `json:"tool_result,omitempty"`
}

// ToolCall is a model's request to run a tool. Arguments is a JSON text.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}

// ToolResult answers the tool call whose id it carries.
type ToolResult struct {
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
	IsError    bool   `json:"is_error,omitempty"`
}

// NewTextMessage returns a message of role r with one text part.
func NewTextMessage(r Role, text string) Message {
	return Message{Role: r, Parts: []Part{TextPart(text)}}
}

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Type: PartText, Text: text} }

// DataPart returns a data part holding the JSON value data.
func DataPart(data json.RawMessage, mimeType string) Part {
	return Part{Type: PartData, Data: data, MimeType: mimeType}
}

// ToolCallPart returns a tool-call part.
func ToolCallPart(id, name, arguments string) Part {
	return Part{Type: PartToolCall, ToolCall: &ToolCall{ID: id, Name: name, Arguments: arguments}}
}

// ToolResultPart returns a tool-result part.
func ToolResultPart(callID, content string, isError bool) Part {
	return Part{Type: PartToolResult, ToolResult: &ToolResult{ToolCallID: callID, Content: content, IsError: isError}}
}

// Text returns the concatenation of the message's text parts.
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the message's tool calls in order.
func (m Message) ToolCalls() []ToolCall {
	var out []ToolCall
	for _, p := range m.Parts {
		if p.Type == PartToolCall && p.ToolCall != nil {
			out = append(out, *p.ToolCall)
		}
	}
	return out
}

// Clone returns a deep copy of m.
func (m Message) Clone() Message {
	out := m
	out.Metadata = maps.Clone(m.Metadata)
	if m.Parts != nil {
		out.Parts = make([]Part, len(m.Parts))
		for i, p := range m.Parts {
			out.Parts[i] = p.Clone()
		}
	}
	return out
}

// Clone returns a deep copy of p.
func (p Part) Clone() Part {
	out := p
	if p.Data != nil {
		out.Data = bytes.Clone(p.Data)
	}
	if p.ToolCall != nil {
		tc := *p.ToolCall
		out.ToolCall = &tc
	}
	if p.ToolResult != nil {
		tr := *p.ToolResult
		out.ToolResult = &tr
	}
	return out
}

// CloneAll returns deep copies of msgs; nil stays nil.
func CloneAll(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Clone()
	}
	return out
}

// Validate reports the first problem with m as a Validation error that names
// the offending part (parts[2].tool_call.id).
func (m Message) Validate() error {
	if !m.Role.Valid() {
		return invalid("role %q is not one of system, user, assistant, tool", m.Role)
	}
	if len(m.Parts) == 0 {
		return invalid("a message needs at least one part")
	}
	for i, p := range m.Parts {
		if err := p.validate(m.Role); err != nil {
			return invalid("parts[%d]%s", i, err.Error())
		}
	}
	return nil
}

type partErr string

func (e partErr) Error() string { return string(e) }

func (p Part) validate(role Role) error {
	extra := func(ok bool) error {
		set := 0
		if p.Text != "" {
			set++
		}
		if p.Data != nil {
			set++
		}
		if p.ToolCall != nil {
			set++
		}
		if p.ToolResult != nil {
			set++
		}
		if !ok || set > 1 {
			return partErr(": a " + string(p.Type) + " part carries a field of another part type")
		}
		return nil
	}
	switch p.Type {
	case PartText:
		if !utf8.ValidString(p.Text) {
			return partErr(".text: not valid UTF-8")
		}
		return extra(p.Data == nil && p.ToolCall == nil && p.ToolResult == nil)
	case PartData:
		if len(p.Data) == 0 || !json.Valid(p.Data) {
			return partErr(".data: not a JSON value")
		}
		return extra(p.ToolCall == nil && p.ToolResult == nil && p.Text == "")
	case PartToolCall:
		if role != RoleAssistant {
			return partErr(": tool_call parts belong to assistant messages")
		}
		if p.ToolCall == nil || p.ToolCall.ID == "" {
			return partErr(".tool_call.id: required")
		}
		if p.ToolCall.Name == "" {
			return partErr(".tool_call.name: required")
		}
		if p.ToolCall.Arguments != "" && !json.Valid([]byte(p.ToolCall.Arguments)) {
			return partErr(".tool_call.arguments: not a JSON text")
		}
		return extra(p.Text == "" && p.Data == nil && p.ToolResult == nil)
	case PartToolResult:
		if role != RoleTool {
			return partErr(": tool_result parts belong to tool messages")
		}
		if p.ToolResult == nil || p.ToolResult.ToolCallID == "" {
			return partErr(".tool_result.tool_call_id: required")
		}
		return extra(p.Text == "" && p.Data == nil && p.ToolCall == nil)
	}
	return partErr(".type: " + strconvQuote(string(p.Type)) + " is not one of text, data, tool_call, tool_result")
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func invalid(format string, args ...any) error {
	return fault.New(fault.Validation, "message", format, args...)
}

// Decode reads one message from its JSON wire form, strictly: unknown
// fields and trailing data are errors. The message is validated.
func Decode(data []byte) (Message, error) {
	var m Message
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Message{}, fault.Wrap(fault.Validation, err, "message", "decode")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Message{}, invalid("decode: trailing data after the message")
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}
