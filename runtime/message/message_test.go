package message_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allRoles = []message.Role{message.RoleSystem, message.RoleUser, message.RoleAssistant, message.RoleTool}

func msg(r message.Role, parts ...message.Part) message.Message {
	return message.Message{Role: r, Parts: parts}
}

func TestRoleValid(t *testing.T) {
	t.Parallel()
	for _, r := range allRoles {
		assert.True(t, r.Valid(), r)
	}
	for _, r := range []message.Role{"", "User", "bot", "function", " user", "user "} {
		assert.False(t, r.Valid(), "%q", r)
	}
}

// TestValidatePartsByRole checks every part type under every role: text and
// data go anywhere, tool_call only in assistant and tool_result only in tool
// messages.
func TestValidatePartsByRole(t *testing.T) {
	t.Parallel()
	parts := map[message.PartType]message.Part{
		message.PartText:       message.TextPart("hello"),
		message.PartData:       message.DataPart(json.RawMessage(`{"a":[1,2]}`), "application/json"),
		message.PartToolCall:   message.ToolCallPart("c1", "search", `{"q":"x"}`),
		message.PartToolResult: message.ToolResultPart("c1", "found", false),
	}
	allowed := map[message.PartType]func(message.Role) bool{
		message.PartText:       func(message.Role) bool { return true },
		message.PartData:       func(message.Role) bool { return true },
		message.PartToolCall:   func(r message.Role) bool { return r == message.RoleAssistant },
		message.PartToolResult: func(r message.Role) bool { return r == message.RoleTool },
	}
	for pt, p := range parts {
		for _, r := range allRoles {
			t.Run(string(r)+"/"+string(pt), func(t *testing.T) {
				t.Parallel()
				err := msg(r, message.TextPart("first"), p).Validate()
				if allowed[pt](r) {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, fault.Validation)
				assert.EqualError(t, err, "message: parts[1]: "+string(pt)+" parts belong to "+
					map[message.PartType]string{message.PartToolCall: "assistant", message.PartToolResult: "tool"}[pt]+" messages")
			})
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	user, asst, tool := message.RoleUser, message.RoleAssistant, message.RoleTool
	data := message.PartData
	callPart := message.ToolCallPart("c1", "search", `{"q":"x"}`)
	resultPart := message.ToolResultPart("c1", "ok", true)
	with := func(p message.Part, f func(*message.Part)) message.Part { f(&p); return p }
	bad := string([]byte{0xff, 0xfe})

	tests := []struct {
		name string
		m    message.Message
		want string // "" when valid; otherwise the exact error text
	}{
		{"empty text is allowed", msg(user, message.TextPart("")), ""},
		{"unicode text", msg(user, message.TextPart("héllo, 世界 🐄")), ""},
		{"data without mime type", msg(user, message.DataPart(json.RawMessage(`42`), "")), ""},
		{"data null", msg(user, message.DataPart(json.RawMessage(`null`), "")), ""},
		{"data with whitespace", msg(user, message.DataPart(json.RawMessage(" [1, 2] "), "")), ""},
		{"tool call without arguments", msg(asst, message.ToolCallPart("c1", "now", "")), ""},
		{"tool result error", msg(tool, resultPart), ""},
		{"name and metadata", message.Message{Role: asst, Name: "bot", Metadata: map[string]string{"k": "v"},
			Parts: []message.Part{message.TextPart("x"), callPart}}, ""},
		{"many parts", msg(asst, message.TextPart("a"), message.DataPart(json.RawMessage(`{}`), ""), callPart, callPart), ""},

		{"empty role", msg("", message.TextPart("x")), `message: role "" is not one of system, user, assistant, tool`},
		{"unknown role", msg("bot", message.TextPart("x")), `message: role "bot" is not one of system, user, assistant, tool`},
		{"role case matters", msg("User", message.TextPart("x")), `message: role "User" is not one of system, user, assistant, tool`},
		{"no parts", msg(user), "message: a message needs at least one part"},
		{"empty parts slice", message.Message{Role: user, Parts: []message.Part{}}, "message: a message needs at least one part"},
		{"invalid name", message.Message{Role: user, Name: bad, Parts: []message.Part{message.TextPart("x")}},
			"message: name: not valid UTF-8"},
		{"invalid metadata value", message.Message{Role: user, Metadata: map[string]string{"b": "ok", "k": bad},
			Parts: []message.Part{message.TextPart("x")}}, `message: metadata["k"]: not valid UTF-8`},
		{"invalid metadata key", message.Message{Role: user, Metadata: map[string]string{bad: "v"},
			Parts: []message.Part{message.TextPart("x")}}, `message: metadata["\xff\xfe"]: not valid UTF-8`},

		{"empty part type", msg(user, message.Part{Text: "x"}),
			`message: parts[0].type: "" is not one of text, data, tool_call, tool_result`},
		{"unknown part type", msg(user, message.TextPart("x"), message.Part{Type: "image"}),
			`message: parts[1].type: "image" is not one of text, data, tool_call, tool_result`},
		{"text invalid UTF-8", msg(user, message.TextPart("ok"), message.TextPart("a"+bad)),
			"message: parts[1].text: not valid UTF-8"},
		{"text with data", msg(user, with(message.TextPart("x"), func(p *message.Part) { p.Data = json.RawMessage(`1`) })),
			"message: parts[0].data: not allowed in a text part"},
		{"text with empty non-nil data", msg(user, with(message.TextPart("x"), func(p *message.Part) { p.Data = json.RawMessage{} })),
			"message: parts[0].data: not allowed in a text part"},
		{"text with mime type", msg(user, with(message.TextPart("x"), func(p *message.Part) { p.MimeType = "text/plain" })),
			"message: parts[0].mime_type: not allowed in a text part"},
		{"text with tool call", msg(asst, with(message.TextPart("x"), func(p *message.Part) { p.ToolCall = callPart.ToolCall })),
			"message: parts[0].tool_call: not allowed in a text part"},
		{"text with tool result", msg(tool, with(message.TextPart(""), func(p *message.Part) { p.ToolResult = resultPart.ToolResult })),
			"message: parts[0].tool_result: not allowed in a text part"},

		{"data missing", msg(user, message.Part{Type: data}), "message: parts[0].data: required"},
		{"data empty", msg(user, message.DataPart(json.RawMessage{}, "")), "message: parts[0].data: required"},
		{"data not JSON", msg(user, message.DataPart(json.RawMessage(`{a:1}`), "")), "message: parts[0].data: not a JSON value"},
		{"data two values", msg(user, message.DataPart(json.RawMessage(`1 2`), "")), "message: parts[0].data: not a JSON value"},
		{"data truncated", msg(user, message.DataPart(json.RawMessage(`{"a":`), "")), "message: parts[0].data: not a JSON value"},
		{"data invalid UTF-8", msg(user, message.DataPart(json.RawMessage(`"`+bad+`"`), "")), "message: parts[0].data: not a JSON value"},
		{"data mime type invalid UTF-8", msg(user, message.DataPart(json.RawMessage(`1`), bad)), "message: parts[0].mime_type: not valid UTF-8"},
		{"data with text", msg(user, with(message.DataPart(json.RawMessage(`1`), ""), func(p *message.Part) { p.Text = "x" })),
			"message: parts[0].text: not allowed in a data part"},
		{"data with tool call", msg(asst, with(message.DataPart(json.RawMessage(`1`), ""), func(p *message.Part) { p.ToolCall = callPart.ToolCall })),
			"message: parts[0].tool_call: not allowed in a data part"},
		{"data with tool result", msg(tool, with(message.DataPart(json.RawMessage(`1`), ""), func(p *message.Part) { p.ToolResult = resultPart.ToolResult })),
			"message: parts[0].tool_result: not allowed in a data part"},

		{"tool call in user message", msg(user, callPart), "message: parts[0]: tool_call parts belong to assistant messages"},
		{"tool call in system message", msg(message.RoleSystem, callPart), "message: parts[0]: tool_call parts belong to assistant messages"},
		{"tool call in tool message", msg(tool, resultPart, callPart), "message: parts[1]: tool_call parts belong to assistant messages"},
		{"tool call missing", msg(asst, message.Part{Type: message.PartToolCall}), "message: parts[0].tool_call: required"},
		{"tool call id missing", msg(asst, message.ToolCallPart("", "search", "")), "message: parts[0].tool_call.id: required"},
		{"tool call id invalid UTF-8", msg(asst, message.ToolCallPart(bad, "search", "")), "message: parts[0].tool_call.id: not valid UTF-8"},
		{"tool call name missing", msg(asst, message.ToolCallPart("c1", "", "")), "message: parts[0].tool_call.name: required"},
		{"tool call name invalid UTF-8", msg(asst, message.ToolCallPart("c1", bad, "")), "message: parts[0].tool_call.name: not valid UTF-8"},
		{"tool call arguments not JSON", msg(asst, message.ToolCallPart("c1", "f", "{q:1}")), "message: parts[0].tool_call.arguments: not a JSON text"},
		{"tool call arguments two values", msg(asst, message.ToolCallPart("c1", "f", "{} {}")), "message: parts[0].tool_call.arguments: not a JSON text"},
		{"tool call arguments invalid UTF-8", msg(asst, message.ToolCallPart("c1", "f", `"`+bad+`"`)), "message: parts[0].tool_call.arguments: not a JSON text"},
		{"tool call with text", msg(asst, with(callPart, func(p *message.Part) { p.Text = "x" })),
			"message: parts[0].text: not allowed in a tool_call part"},
		{"tool call with data", msg(asst, with(callPart, func(p *message.Part) { p.Data = json.RawMessage(`1`) })),
			"message: parts[0].data: not allowed in a tool_call part"},
		{"tool call with mime type", msg(asst, with(callPart, func(p *message.Part) { p.MimeType = "a/b" })),
			"message: parts[0].mime_type: not allowed in a tool_call part"},
		{"tool call with tool result", msg(asst, with(callPart, func(p *message.Part) { p.ToolResult = resultPart.ToolResult })),
			"message: parts[0].tool_result: not allowed in a tool_call part"},

		{"tool result in user message", msg(user, resultPart), "message: parts[0]: tool_result parts belong to tool messages"},
		{"tool result in assistant message", msg(asst, message.TextPart("x"), resultPart), "message: parts[1]: tool_result parts belong to tool messages"},
		{"tool result in system message", msg(message.RoleSystem, resultPart), "message: parts[0]: tool_result parts belong to tool messages"},
		{"tool result missing", msg(tool, message.Part{Type: message.PartToolResult}), "message: parts[0].tool_result: required"},
		{"tool result call id missing", msg(tool, message.ToolResultPart("", "x", false)), "message: parts[0].tool_result.tool_call_id: required"},
		{"tool result call id invalid UTF-8", msg(tool, message.ToolResultPart(bad, "x", false)), "message: parts[0].tool_result.tool_call_id: not valid UTF-8"},
		{"tool result content invalid UTF-8", msg(tool, message.ToolResultPart("c1", bad, false)), "message: parts[0].tool_result.content: not valid UTF-8"},
		{"tool result with text", msg(tool, with(resultPart, func(p *message.Part) { p.Text = "x" })),
			"message: parts[0].text: not allowed in a tool_result part"},
		{"tool result with data", msg(tool, with(resultPart, func(p *message.Part) { p.Data = json.RawMessage(`1`) })),
			"message: parts[0].data: not allowed in a tool_result part"},
		{"tool result with tool call", msg(tool, with(resultPart, func(p *message.Part) { p.ToolCall = callPart.ToolCall })),
			"message: parts[0].tool_call: not allowed in a tool_result part"},
		{"first bad part is named", msg(asst, message.TextPart("a"), callPart, message.ToolCallPart("c2", "", ""), message.Part{Type: "x"}),
			"message: parts[2].tool_call.name: required"},
		{"role checked before parts", msg("bot", message.Part{Type: "x"}), `message: role "bot" is not one of system, user, assistant, tool`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.m.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.EqualError(t, err, tt.want)
			assert.ErrorIs(t, err, fault.Validation)
			assert.Equal(t, fault.Validation, fault.KindOf(err))
			var fe *fault.Error
			require.True(t, errors.As(err, &fe))
			assert.Equal(t, "message", fe.Op)
		})
	}
}

func TestConstructors(t *testing.T) {
	t.Parallel()
	m := message.NewTextMessage(message.RoleUser, "hi")
	assert.Equal(t, message.Message{Role: message.RoleUser, Parts: []message.Part{{Type: message.PartText, Text: "hi"}}}, m)
	require.NoError(t, m.Validate())

	assert.Equal(t, message.Part{Type: message.PartData, Data: json.RawMessage(`[1]`), MimeType: "application/json"},
		message.DataPart(json.RawMessage(`[1]`), "application/json"))
	assert.Equal(t, message.Part{Type: message.PartToolCall, ToolCall: &message.ToolCall{ID: "c", Name: "n", Arguments: "{}"}},
		message.ToolCallPart("c", "n", "{}"))
	assert.Equal(t, message.Part{Type: message.PartToolResult, ToolResult: &message.ToolResult{ToolCallID: "c", Content: "r", IsError: true}},
		message.ToolResultPart("c", "r", true))

	// A message with an empty text is still one text part.
	empty := message.NewTextMessage(message.RoleAssistant, "")
	require.Len(t, empty.Parts, 1)
	assert.NoError(t, empty.Validate())
}

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    message.Message
		want string
	}{
		{"no parts", message.Message{Role: message.RoleUser}, ""},
		{"one text", message.NewTextMessage(message.RoleUser, "hello"), "hello"},
		{"texts concatenated in order without separator", msg(message.RoleUser,
			message.TextPart("a"), message.TextPart("b"), message.TextPart("c")), "abc"},
		{"other parts skipped", msg(message.RoleAssistant,
			message.TextPart("x"), message.DataPart(json.RawMessage(`"no"`), ""),
			message.ToolCallPart("c", "f", `{}`), message.TextPart("y")), "xy"},
		{"only tool parts", msg(message.RoleTool, message.ToolResultPart("c", "content", false)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, tt.m.Text())
		})
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	m := msg(message.RoleAssistant,
		message.TextPart("let me look"),
		message.ToolCallPart("c1", "search", `{"q":"a"}`),
		message.DataPart(json.RawMessage(`1`), ""),
		message.ToolCallPart("c2", "fetch", ""),
		message.Part{Type: message.PartToolCall}, // malformed: no call, skipped
	)
	calls := m.ToolCalls()
	assert.Equal(t, []message.ToolCall{
		{ID: "c1", Name: "search", Arguments: `{"q":"a"}`},
		{ID: "c2", Name: "fetch"},
	}, calls)

	// The calls are copies: changing them leaves the message alone.
	calls[0].Name = "changed"
	assert.Equal(t, "search", m.Parts[1].ToolCall.Name)

	assert.Nil(t, message.NewTextMessage(message.RoleAssistant, "x").ToolCalls())
	assert.Nil(t, message.Message{}.ToolCalls())
}
