package tools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
)

// Declare a tool, then run a batch of calls as a model asked for them:
// each result keeps its call's id, and a call the schema refuses is an
// error result the model sees.
func Example() {
	rt, err := js.New(js.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	asm, err := tools.New(context.Background(), tools.Settings{Tools: []tools.ToolSettings{{
		Name:        "add",
		Description: "Adds two numbers.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		Source:      json.RawMessage(`"return config.a + config.b"`),
	}}}, map[string]sandbox.Runtime{"js": rt})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range asm.Definitions() {
		fmt.Println("tool", d.Name, string(d.Parameters))
	}
	results, err := asm.Execute(context.Background(), tool.Batch{
		Host: agenttest.NewHost(),
		Run:  agent.Run{ID: "run-1", AgentID: "calculator"},
		Node: "tools",
		Calls: []message.ToolCall{
			{ID: "call_1", Name: "add", Arguments: `{"a": 2, "b": 3}`},
			{ID: "call_2", Name: "add", Arguments: `{"a": 2}`},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Printf("%s error=%t %s\n", r.ToolCallID, r.IsError, r.Content)
	}
	// Output:
	// tool add {"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}
	// call_1 error=false 5
	// call_2 error=true tool "add": invalid arguments: $.b: required
}
