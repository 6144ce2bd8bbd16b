package checkpointtest_test

import (
	"fmt"

	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
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
