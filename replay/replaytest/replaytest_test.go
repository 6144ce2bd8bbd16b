package replaytest_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/corral-rt/corral/replay/replaytest"
	"github.com/stretchr/testify/assert"
)

// fakeTB records what Run reports instead of failing the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func run(t *testing.T, file string) string {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		replaytest.Run(f, file)
	}()
	<-done
	return f.failed
}

// Run passes a recording that replays identically and fails one that
// diverges, naming the node, the call and the script line, or that does
// not exist.
func TestRun(t *testing.T) {
	t.Parallel()
	assert.Empty(t, run(t, "../testdata/replay/dice.jsonl"))
	msg := run(t, "../testdata/replay/bad-reordered.jsonl")
	assert.Contains(t, msg, "diverged: input at node roll call 1 (random; host call 1) at scripts/roll.js:3:")
	assert.Contains(t, msg, `$.func: expected "now", got "random"`)
	assert.Contains(t, run(t, "../testdata/replay/missing.jsonl"), "no such file")
}
