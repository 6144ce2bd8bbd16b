package message

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
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

// Validate reports the first problem with m as a Validation error that
// names the place: the role, the name, a metadata key, or the offending
// part and field ("message: parts[2].tool_call.id: required").
//
// A valid message has a known role and at least one part; its strings are
// valid UTF-8; each part is of a known type, sets the field of its type and
// no field of another type (mime_type belongs to data parts); data and
// tool-call arguments are JSON texts; tool_call parts appear only in
// assistant messages and tool_result parts only in tool messages.
func (m Message) Validate() error {
	if !m.Role.Valid() {
		return invalid("role %q is not one of system, user, assistant, tool", m.Role)
	}
	if !utf8.ValidString(m.Name) {
		return invalid("name: not valid UTF-8")
	}
	if len(m.Metadata) > 0 { // sorted, so that the first bad key is always the one named
		for _, k := range slices.Sorted(maps.Keys(m.Metadata)) {
			if !utf8.ValidString(k) || !utf8.ValidString(m.Metadata[k]) {
				return invalid("metadata[%q]: not valid UTF-8", k)
			}
		}
	}
	if len(m.Parts) == 0 {
		return invalid("a message needs at least one part")
	}
	for i, p := range m.Parts {
		if problem := p.problem(m.Role); problem != "" {
			return invalid("parts[%d]%s", i, problem)
		}
	}
	return nil
}

// problem returns what is wrong with p in a message of role, as a path
// suffix and a reason (".text: not valid UTF-8"), or "" when p is well
// formed.
func (p Part) problem(role Role) string {
	var problem string
	switch p.Type {
	case PartText:
		if !utf8.ValidString(p.Text) {
			problem = ".text: not valid UTF-8"
		}
	case PartData:
		problem = dataProblem(p.Data, p.MimeType)
	case PartToolCall:
		if role != RoleAssistant {
			return ": tool_call parts belong to assistant messages"
		}
		problem = p.ToolCall.problem()
	case PartToolResult:
		if role != RoleTool {
			return ": tool_result parts belong to tool messages"
		}
		problem = p.ToolResult.problem()
	default:
		return fmt.Sprintf(".type: %q is not one of text, data, tool_call, tool_result", p.Type)
	}
	if problem != "" {
		return problem
	}
	return p.foreignField()
}

func dataProblem(data json.RawMessage, mimeType string) string {
	switch {
	case len(data) == 0:
		return ".data: required"
	case !utf8.Valid(data) || !json.Valid(data):
		return ".data: not a JSON value"
	case !utf8.ValidString(mimeType):
		return ".mime_type: not valid UTF-8"
	}
	return ""
}

func (tc *ToolCall) problem() string {
	switch {
	case tc == nil:
		return ".tool_call: required"
	case tc.ID == "":
		return ".tool_call.id: required"
	case !utf8.ValidString(tc.ID):
		return ".tool_call.id: not valid UTF-8"
	case tc.Name == "":
		return ".tool_call.name: required"
	case !utf8.ValidString(tc.Name):
		return ".tool_call.name: not valid UTF-8"
	case tc.Arguments != "" && (!utf8.ValidString(tc.Arguments) || !json.Valid([]byte(tc.Arguments))):
		return ".tool_call.arguments: not a JSON text"
	}
	return ""
}

func (tr *ToolResult) problem() string {
	switch {
	case tr == nil:
		return ".tool_result: required"
	case tr.ToolCallID == "":
		return ".tool_result.tool_call_id: required"
	case !utf8.ValidString(tr.ToolCallID):
		return ".tool_result.tool_call_id: not valid UTF-8"
	case !utf8.ValidString(tr.Content):
		return ".tool_result.content: not valid UTF-8"
	}
	return ""
}

// foreignField names the first field of p that belongs to another part
// type.
func (p Part) foreignField() string {
	fields := [...]struct {
		name  string
		set   bool
		owner PartType
	}{
		{"text", p.Text != "", PartText},
		{"data", p.Data != nil, PartData},
		{"mime_type", p.MimeType != "", PartData},
		{"tool_call", p.ToolCall != nil, PartToolCall},
		{"tool_result", p.ToolResult != nil, PartToolResult},
	}
	for _, f := range fields {
		if f.set && f.owner != p.Type {
			return "." + f.name + ": not allowed in a " + string(p.Type) + " part"
		}
	}
	return ""
}

func invalid(format string, args ...any) error {
	return fault.New(fault.Validation, "message", format, args...)
}

// Decode reads one message from its JSON wire form, strictly: unknown
// fields, empty input and trailing data are errors, and the message must
// pass Validate. Every error is of kind fault.Validation; a JSON syntax or
// type error stays in the chain for errors.As.
func Decode(data []byte) (Message, error) {
	var m Message
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		if err == io.EOF {
			return Message{}, invalid("decode: no message in the input")
		}
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
