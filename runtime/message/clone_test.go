package message_test

import (
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullMessage returns a message with every field and every part type set.
// Each call builds fresh slices and maps, so two results share nothing.
func fullMessage() message.Message {
	return message.Message{
		Role:     message.RoleAssistant,
		Name:     "planner",
		Metadata: map[string]string{"trace": "t1", "lang": "en"},
		Parts: []message.Part{
			message.TextPart("thinking"),
			message.DataPart(json.RawMessage(`{"k":[1,2,3]}`), "application/json"),
			message.ToolCallPart("c1", "search", `{"q":"cows"}`),
			// Not valid in an assistant message, but Clone copies what it is given.
			message.ToolResultPart("c0", "earlier", true),
		},
	}
}

func TestCloneIsDeep(t *testing.T) {
	t.Parallel()
	mutations := []struct {
		name   string
		mutate func(m *message.Message)
	}{
		{"role", func(m *message.Message) { m.Role = message.RoleUser }},
		{"name", func(m *message.Message) { m.Name = "other" }},
		{"metadata value", func(m *message.Message) { m.Metadata["trace"] = "changed" }},
		{"metadata add", func(m *message.Message) { m.Metadata["new"] = "x" }},
		{"metadata delete", func(m *message.Message) { delete(m.Metadata, "lang") }},
		{"parts element", func(m *message.Message) { m.Parts[0] = message.TextPart("replaced") }},
		{"parts append", func(m *message.Message) { m.Parts = append(m.Parts[:1], message.TextPart("x")) }},
		{"part type", func(m *message.Message) { m.Parts[0].Type = message.PartData }},
		{"part text", func(m *message.Message) { m.Parts[0].Text = "changed" }},
		{"part data bytes", func(m *message.Message) { m.Parts[1].Data[2] = 'X' }},
		{"part data append", func(m *message.Message) { m.Parts[1].Data = append(m.Parts[1].Data[:3], '}') }},
		{"part mime type", func(m *message.Message) { m.Parts[1].MimeType = "text/plain" }},
		{"tool call id", func(m *message.Message) { m.Parts[2].ToolCall.ID = "x" }},
		{"tool call name", func(m *message.Message) { m.Parts[2].ToolCall.Name = "x" }},
		{"tool call arguments", func(m *message.Message) { m.Parts[2].ToolCall.Arguments = "{}" }},
		{"tool call pointer", func(m *message.Message) { *m.Parts[2].ToolCall = message.ToolCall{} }},
		{"tool result call id", func(m *message.Message) { m.Parts[3].ToolResult.ToolCallID = "x" }},
		{"tool result content", func(m *message.Message) { m.Parts[3].ToolResult.Content = "x" }},
		{"tool result is error", func(m *message.Message) { m.Parts[3].ToolResult.IsError = false }},
	}
	for _, mu := range mutations {
		t.Run(mu.name, func(t *testing.T) {
			t.Parallel()
			orig := fullMessage()
			clone := orig.Clone()
			require.Equal(t, orig, clone)
			mu.mutate(&clone)
			assert.NotEqual(t, fullMessage(), clone, "the mutation must change the clone")
			assert.Equal(t, fullMessage(), orig, "the original must not change")

			// And the other way round: changing the original leaves a clone alone.
			orig2 := fullMessage()
			clone2 := orig2.Clone()
			mu.mutate(&orig2)
			assert.Equal(t, fullMessage(), clone2)
		})
	}
}

func TestCloneKeepsNilAndEmpty(t *testing.T) {
	t.Parallel()
	zero := message.Message{}
	assert.Equal(t, zero, zero.Clone())
	assert.Nil(t, zero.Clone().Parts)
	assert.Nil(t, zero.Clone().Metadata)

	empty := message.Message{Parts: []message.Part{}, Metadata: map[string]string{}}
	c := empty.Clone()
	assert.NotNil(t, c.Parts)
	assert.Empty(t, c.Parts)
	assert.NotNil(t, c.Metadata)

	p := message.Part{Type: message.PartData, Data: json.RawMessage{}}
	pc := p.Clone()
	assert.NotNil(t, pc.Data)
	assert.Empty(t, pc.Data)
	assert.Nil(t, message.TextPart("x").Clone().Data)
	assert.Nil(t, message.TextPart("x").Clone().ToolCall)
	assert.Nil(t, message.TextPart("x").Clone().ToolResult)
}

func TestPartCloneIsDeep(t *testing.T) {
	t.Parallel()
	call := message.ToolCallPart("c1", "f", `{}`)
	cc := call.Clone()
	require.NotSame(t, call.ToolCall, cc.ToolCall)
	cc.ToolCall.Name = "g"
	assert.Equal(t, "f", call.ToolCall.Name)

	res := message.ToolResultPart("c1", "r", false)
	rc := res.Clone()
	require.NotSame(t, res.ToolResult, rc.ToolResult)
	rc.ToolResult.Content = "changed"
	assert.Equal(t, "r", res.ToolResult.Content)

	data := message.DataPart(json.RawMessage(`[1]`), "")
	dc := data.Clone()
	dc.Data[1] = '2'
	assert.JSONEq(t, `[1]`, string(data.Data))
}

func TestCloneAll(t *testing.T) {
	t.Parallel()
	assert.Nil(t, message.CloneAll(nil))
	empty := message.CloneAll([]message.Message{})
	assert.NotNil(t, empty)
	assert.Empty(t, empty)

	orig := []message.Message{fullMessage(), message.NewTextMessage(message.RoleUser, "hi")}
	clones := message.CloneAll(orig)
	require.Equal(t, orig, clones)

	clones[0].Parts[2].ToolCall.Name = "changed"
	clones[0].Metadata["trace"] = "changed"
	clones[1].Parts[0].Text = "changed"
	clones[1] = message.Message{}
	assert.Equal(t, []message.Message{fullMessage(), message.NewTextMessage(message.RoleUser, "hi")}, orig)

	// The result has its own backing array.
	more := append(clones[:1], message.NewTextMessage(message.RoleTool, "x"))
	_ = more
	assert.Equal(t, message.RoleUser, orig[1].Role)
}
