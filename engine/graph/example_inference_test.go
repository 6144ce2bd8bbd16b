package graph_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/engine/scripted"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// An inference node answered by the scripted provider: the reply is
// appended to the main channel and its text written to a board var.
func ExampleInferenceType() {
	doc, err := graph.Parse([]byte(`
name: chat
entry: chat
nodes:
  - id: chat
    type: inference
    config:
      system_prompt: You are terse.
      output_key: reply
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	llm, err := scripted.New(scripted.Settings{Replies: []scripted.Reply{{Match: "moo", Text: "Hello, cow."}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := graph.Build(context.Background(), doc, graph.Options{Deps: map[string]any{graph.ModelDep: llm}})
	if err != nil {
		fmt.Println(err)
		return
	}
	board := agent.NewBoard()
	board.Append(agent.MainChannel, message.NewTextMessage(message.RoleUser, "Moo!"))
	out, err := e.Execute(context.Background(), agent.Run{ID: "r1", AgentID: "a"}, agent.NoopHost{}, board)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out.Channel(agent.MainChannel) {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	fmt.Println("reply:", out.Vars["reply"], "tool_pending:", out.Vars["tool_pending"])
	// Output:
	// user: Moo!
	// assistant: Hello, cow.
	// reply: Hello, cow. tool_pending: false
}
