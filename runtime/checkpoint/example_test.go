package checkpoint_test

import (
	"context"
	"fmt"
	"os"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/workspace"
)

func ExampleStore() {
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ws, err := workspace.NewLocal(dir)
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	store, err := checkpoint.NewStore(ws, "") // records under agent/checkpoints
	if err != nil {
		panic(err)
	}
	defer store.Close()

	ctx := context.Background()
	board := agent.NewBoard()
	board.Vars["step"] = "draft"
	if err := store.Save(ctx, agent.Checkpoint{ExecID: "run-1", Steps: []string{"draft"}, Iteration: 1, Board: board}); err != nil {
		panic(err)
	}

	cp, _ := store.Load(ctx, "run-1")
	fmt.Println(cp.ExecID, cp.Iteration, cp.Board.Vars["step"])
	missing, err := store.Load(ctx, "run-2")
	fmt.Println(missing == nil, err)
	ids, _ := store.List(ctx)
	fmt.Println(ids)
	files, _ := ws.List(ctx, "agent/checkpoints")
	fmt.Println(files)
	// Output:
	// run-1 1 draft
	// true <nil>
	// [run-1]
	// [run-1.log]
}

func ExampleSessionKey() {
	fmt.Println(checkpoint.SessionKey("assistant", "c1"))
	// Output:
	// session-de2a0b24d4901224739029fb2996b16d
}
