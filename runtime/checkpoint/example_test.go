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

// A backend that keeps deltas: a Chain per exec id picks each save's
// entry, the backend stores Kind, Seq and Data as they are, and Fold reads
// them back.
func ExampleChain() {
	var chain checkpoint.Chain // one per exec id
	var stored []checkpoint.Entry
	save := func(cp agent.Checkpoint) {
		e, err := chain.Next(&cp)
		if err != nil {
			panic(err)
		}
		if e.Kind == checkpoint.EntrySnapshot {
			stored = stored[:0] // a snapshot replaces what came before
		}
		stored = append(stored, e) // the backend's write
		chain.Commit(e, &cp)
	}

	board := agent.NewBoard()
	board.Vars["draft"] = "a long text"
	cp := agent.Checkpoint{ExecID: "run-1", Steps: []string{"write"}, Iteration: 1, Board: board,
		Changes: &agent.BoardChanges{Writer: 7, Seq: 1}}
	save(cp)
	board.Vars["review"] = "fine"
	cp.Steps, cp.Iteration = []string{"review"}, 2
	cp.Changes = &agent.BoardChanges{Writer: 7, Seq: 2, Base: 1, Vars: map[string]struct{}{"review": {}}}
	save(cp)

	for _, e := range stored {
		fmt.Println(e.Seq, e.Kind)
	}
	got, err := checkpoint.Fold(stored)
	if err != nil {
		panic(err)
	}
	fmt.Println(got.Iteration, got.Board.Vars["draft"], got.Board.Vars["review"])
	// Output:
	// 1 snapshot
	// 2 delta
	// 2 a long text fine
}

// A store that flushes its logs at the end of each turn rather than at
// every wave.
func ExampleNewStoreWithConfig() {
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
	store, err := checkpoint.NewStoreWithConfig(ws, checkpoint.Config{Sync: checkpoint.SyncTurn})
	if err != nil {
		panic(err)
	}
	defer store.Close() // flushes what is left
	fmt.Println(store.Prefix(), store.Sync())
	// Output:
	// agent/checkpoints turn
}
