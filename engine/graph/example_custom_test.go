package graph_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
)

// A custom node type whose nodes must read the var named by config.from
// and write the var named by config.into; writing anything else fails the
// node.
func ExampleNewScriptNodeType() {
	ctx := context.Background()
	rt, err := js.New(js.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	upper, err := graph.NewScriptNodeType(graph.ScriptNodeTypeConfig{
		Type:    "upper",
		Source:  `board.setVar(config.into, board.getVar(config.from).toUpperCase())`,
		Runtime: rt,
		Reads:   []graph.Role{{Kind: graph.RoleVar, ConfigKey: "from", Required: true}},
		Writes:  []graph.Role{{Kind: graph.RoleVar, ConfigKey: "into", Required: true}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	doc, err := graph.Parse([]byte(`{name: g, entry: up, nodes: [{id: up, type: upper, config: {from: name, into: shout}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	eng, err := graph.Build(ctx, doc, graph.Options{NodeTypes: []graph.NodeType{upper},
		Runtimes: map[string]sandbox.Runtime{"js": rt}})
	if err != nil {
		fmt.Println(err)
		return
	}
	run := agent.Run{ID: "run-1", AgentID: "bot"}
	board := agent.NewBoard()
	board.Vars["name"] = "ada"
	out, err := eng.Execute(ctx, run, agenttest.NewHost(), board)
	fmt.Println(out.Vars["shout"], err)

	_, err = eng.Execute(ctx, run, agenttest.NewHost(), agent.NewBoard())
	fmt.Println(err)
	// Output:
	// ADA <nil>
	// graph "g": node "up": check read roles: node "up": required read var "name" (config.from) is not on the board
}
