package message_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
)

func ExampleNewTextMessage() {
	m := message.NewTextMessage(message.RoleUser, "What time is it?")
	fmt.Println(m.Role, m.Text(), m.Validate())

	wire, _ := json.Marshal(m)
	fmt.Println(string(wire))
	// Output:
	// user What time is it? <nil>
	// {"role":"user","parts":[{"type":"text","text":"What time is it?"}]}
}

func ExampleMessage_Validate() {
	m := message.Message{
		Role: message.RoleUser,
		Parts: []message.Part{
			message.TextPart("look this up"),
			message.ToolCallPart("call_1", "search", `{"q":"cows"}`),
		},
	}
	err := m.Validate()
	fmt.Println(err)
	fmt.Println(errors.Is(err, fault.Validation))
	// Output:
	// message: parts[1]: tool_call parts belong to assistant messages
	// true
}

func ExampleMessage_ToolCalls() {
	m := message.Message{
		Role: message.RoleAssistant,
		Parts: []message.Part{
			message.TextPart("Checking two sources."),
			message.ToolCallPart("call_1", "search", `{"q":"cows"}`),
			message.ToolCallPart("call_2", "search", `{"q":"sheep"}`),
		},
	}
	for _, c := range m.ToolCalls() {
		fmt.Println(c.ID, c.Name, c.Arguments)
	}
	// Output:
	// call_1 search {"q":"cows"}
	// call_2 search {"q":"sheep"}
}

func ExampleDecode() {
	m, err := message.Decode([]byte(`{"role":"tool","parts":[
		{"type":"tool_result","tool_result":{"tool_call_id":"call_1","content":"3 cows"}}]}`))
	fmt.Println(m.Role, m.Parts[0].ToolResult.Content, err)

	_, err = message.Decode([]byte(`{"role":"user","parts":[{"type":"text","text":"hi"}],"colour":"red"}`))
	fmt.Println(err)
	// Output:
	// tool 3 cows <nil>
	// message: decode: json: unknown field "colour"
}

func ExampleMessage_Clone() {
	orig := message.NewTextMessage(message.RoleUser, "hello")
	c := orig.Clone()
	c.Parts[0].Text = "changed"
	fmt.Println(orig.Text(), c.Text())
	// Output:
	// hello changed
}
