package checkpointtest_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/corral-rt/corral/runtime/message"
)

// The rules a checkpoint store must obey, as the suite checks them.
func ExampleCases() {
	for _, c := range checkpointtest.Cases() {
		fmt.Println(c.Name)
	}
	// Output:
	// round trip
	// save copies
	// load copies
	// last write wins
	// ids are independent
	// concurrent saves never tear
	// missing is nil
	// invalid checkpoint
	// bad exec ids
	// lister sorted
	// deleter idempotent
	// deltas fold
	// stale changes
	// compaction
	// torn tail
}

// A Writer saves checkpoints with BoardChanges, as a graph run does: after
// the first save, each carries only what changed.
func ExampleWriter() {
	ctx := context.Background()
	store := checkpoint.NewMemory()
	w := checkpointtest.NewWriter(store, checkpointtest.NewCheckpoint("run-1", 1), 42)
	if err := w.Save(ctx); err != nil {
		panic(err)
	}
	w.Set("count", 2.0)
	w.Append("main", message.NewTextMessage(message.RoleAssistant, "more"))
	if err := w.Save(ctx); err != nil {
		panic(err)
	}
	got, _ := store.Load(ctx, "run-1")
	fmt.Println(got.Board.Vars["count"], len(got.Board.Channel("main")))
	// Output:
	// 2 4
}
