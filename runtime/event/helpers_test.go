package event_test

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// pollEvery is the polling interval of the tests' waits.
const pollEvery = 5 * time.Millisecond

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// checkGoroutines records the number of goroutines and returns a function
// that fails the test unless the number comes back to at most that many
// within a generous deadline. Tests that use it must not run in parallel.
func checkGoroutines(t *testing.T) func() {
	t.Helper()
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		var now int
		for {
			now = runtime.NumGoroutine()
			if now <= before || time.Now().After(deadline) {
				break
			}
			time.Sleep(pollEvery)
		}
		if now > before {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Errorf("goroutines leaked: %d before, %d after\n%s", before, now, buf[:n])
		}
	}
}
