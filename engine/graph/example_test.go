package graph_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
)

// A graph document in YAML: two script nodes and a conditional edge.
func ExampleParse() {
	doc, err := graph.Parse([]byte(`
name: greeter
version: "2"
entry: ask
nodes:
  - id: ask
    type: script
    config: {source: 'board.setVar("asked", true)'}
  - id: greet
    type: script
    config:
      source: 'board.setVar("greeting", "hello " + config.who)'
      config: {who: "${board.user:stranger}"}
edges:
  - {from: ask, to: greet, condition: asked == true}
  - {from: greet, to: __end__}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := doc.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range doc.Nodes {
		fmt.Println(n.ID, n.Type)
	}
	fmt.Println("spec version:", doc.SpecVersion())
	// Output:
	// ask script
	// greet script
	// spec version: 2
}

// Board references in a node's config: a reference that stands alone keeps
// the value's type; inside text it is formatted.
func ExampleResolveRefs() {
	vars := map[string]any{"user": map[string]any{"name": "Ada"}, "limit": 3.0}
	cfg := map[string]any{
		"greeting": "hello ${board.user.name}",
		"limit":    "${board.limit}",
		"mode":     "${board.mode:fast}",
		"literal":  `\${board.user}`,
	}
	out, err := graph.ResolveRefs(cfg, vars)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := out.(map[string]any)
	fmt.Printf("%q %v %q %q\n", m["greeting"], m["limit"], m["mode"], m["literal"])
	// Output:
	// "hello Ada" 3 "fast" "${board.user}"
}

// Errors name the place in the document.
func ExampleDocument_Validate() {
	doc, _ := graph.Parse([]byte(`
name: broken
entry: start
nodes:
  - {id: start, type: script}
edges:
  - {from: start, to: finish}
`))
	fmt.Println(doc.Validate())
	// Output:
	// validate graph: edges[0].to: "finish" is neither a node nor __end__
}

// A graph run on the goja script runtime: conditions route on the board,
// and the loop ends when its condition turns false.
func ExampleEngine_Execute() {
	doc, err := graph.Parse([]byte(`
name: countdown
entry: tick
nodes:
  - id: tick
    type: script
    config:
      source: board.setVar("left", board.getVar("left") - 1)
  - id: liftoff
    type: script
    config:
      source: board.setVar("status", "liftoff after " + config.ticks + " ticks")
      config: {ticks: "${board.start}"}
edges:
  - {from: tick, to: tick, condition: left > 0}
  - {from: tick, to: liftoff, condition: left === 0}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, err := js.New(js.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	eng, err := graph.Build(context.Background(), doc, graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt}})
	if err != nil {
		fmt.Println(err)
		return
	}
	board := agent.NewBoard()
	board.Vars["start"], board.Vars["left"] = 3, 3
	out, err := eng.Execute(context.Background(), agent.Run{ID: "run-1", AgentID: "demo"}, agent.NoopHost{}, board)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Vars["status"])
	// Output:
	// liftoff after 3 ticks
}
