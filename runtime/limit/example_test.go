package limit_test

import (
	"fmt"
	"time"

	"github.com/corral-rt/corral/runtime/limit"
)

// A caller's limits can only tighten the runtime's; unset fields keep the
// runtime's value.
func ExampleLimits_Tighten() {
	runtimeLimits := limit.Defaults()
	callerLimits := limit.Limits{WallTime: time.Second, MemoryBytes: 1 << 40}
	got := runtimeLimits.Tighten(callerLimits)
	fmt.Println(got.WallTime, got.MemoryBytes == limit.DefaultMemoryBytes, got.StackDepth)
	// Output: 1s true 256
}
