package scripted_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/engine/scripted"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
)

// A scripted conversation: a question about the weather asks for a tool,
// the tool's result is read back, anything else gets the fallback.
func ExampleProvider_Generate() {
	raw, _ := resource.YAMLToJSON([]byte(`
replies:
  - match: weather
    tool_calls: [{name: get_weather, arguments: {city: Lyon}}]
  - on: tool
    text: "Lyon: {{input}}."
fallback:
  text: Ask me about the weather.
`))
	s, err := scripted.Parse(raw)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := scripted.New(s)
	ctx := context.Background()

	conv := []message.Message{message.NewTextMessage(message.RoleUser, "What's the weather?")}
	r, _ := p.Generate(ctx, model.Request{Messages: conv}, nil)
	call := r.Message.ToolCalls()[0]
	fmt.Println(r.FinishReason, call.ID, call.Name, call.Arguments)

	conv = append(conv, r.Message, message.Message{Role: message.RoleTool,
		Parts: []message.Part{message.ToolResultPart(call.ID, "sunny, 21°C", false)}})
	var pieces []string
	r, _ = p.Generate(ctx, model.Request{Messages: conv}, func(d model.Delta) error {
		pieces = append(pieces, d.Text)
		return nil
	})
	fmt.Printf("%q\n", pieces)
	fmt.Println(r.FinishReason, r.Message.Text())
	// Output:
	// tool_calls call_0_0 get_weather {"city":"Lyon"}
	// ["Lyon: " "sunny, " "21°C."]
	// stop Lyon: sunny, 21°C.
}
