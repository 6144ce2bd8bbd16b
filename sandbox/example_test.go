package sandbox_test

import (
	"fmt"
	"time"

	"github.com/corral-rt/corral/sandbox"
)

// An agent's limits can only tighten the runtime's.
func ExampleLimits_Tighten() {
	runtimeLimits := sandbox.DefaultLimits()
	agentLimits := sandbox.Limits{WallTime: time.Second, MemoryBytes: 1 << 40}
	got := runtimeLimits.Tighten(agentLimits)
	fmt.Println(got.WallTime, got.MemoryBytes == sandbox.DefaultMemoryBytes)
	// Output: 1s true
}
