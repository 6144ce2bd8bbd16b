package js_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
)

// A node script reads its config and the board, and writes the board.
func ExampleRuntime_Invoke() {
	rt, err := js.New(js.Options{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	board := agent.NewBoard()
	board.Vars["name"] = "Ada"
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{
		Node:   "greet",
		Config: map[string]any{"greeting": "Hello"},
		Script: sandbox.Script{Source: `
			const name = board.getVar("name");
			board.setVar("message", config.greeting + ", " + name + "!");`},
	}, board)
	fmt.Println(err, board.Vars["message"])
	// Output: <nil> Hello, Ada!
}

// A condition is an expression over the board vars; a var that is not set
// reads as undefined.
func ExampleRuntime_Eval() {
	rt, err := js.New(js.Options{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	for _, vars := range []map[string]any{{"tool_pending": true}, {}} {
		v, err := rt.Eval(context.Background(), sandbox.Evaluation{Node: "edge", Expr: "tool_pending == true", Vars: vars})
		fmt.Println(v, err)
	}
	// Output:
	// true <nil>
	// false <nil>
}

// A script that runs past its wall time stops with a LimitError.
func ExampleRuntime_Invoke_limit() {
	rt, err := js.New(js.Options{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{
		Node:   "spin",
		Script: sandbox.Script{Source: `for (;;) {}`},
		Limits: sandbox.Limits{WallTime: 50_000_000}, // 50ms
	}, nil)
	fmt.Println(err)
	// Output: node "spin": wall_time limit of 50ms exceeded
}
