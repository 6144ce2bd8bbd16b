package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker's death is classified from its whole crash report, read as
// it arrives in pieces, never from the line it happens to end on: a
// report of a fault in the C code beneath the worker (the race
// detector's runtime, the C library) ends in a register dump, and the
// error names the report's header instead. testdata/deaths holds the
// shapes Go workers write: the cap refusing memory to the Go heap, to a
// thread, to the race detector's shadow (in a message or as a fault), and
// deaths that are not the cap (a Go fatal error, a stack overflow, a
// panic, a Go-code fault, a SIGQUIT, a worker that cannot start).
// REF 9.M17
func TestDeathReports(t *testing.T) {
	cases := []struct {
		file   string
		memory bool   // the cap ended the worker
		cause  string // what the error names
	}{
		{"race-segv-registers.txt", true, "SIGSEGV: segmentation violation"},
		{"race-shadow.txt", true, "ThreadSanitizer failed to allocate"},
		{"go-out-of-memory.txt", true, "fatal error: runtime: out of memory"},
		{"go-heap-block.txt", true, "runtime: out of memory: cannot allocate 268435456-byte block"},
		{"go-arena-metadata.txt", true, "fatal error: out of memory allocating heap arena metadata"},
		{"go-cannot-map.txt", true, "runtime: cannot map pages in arena address space"},
		{"thread-refused.txt", true, "runtime: failed to create new OS thread"},
		{"c-abort.txt", true, "runtime/cgo: pthread_create failed"},
		{"go-fatal-unlock.txt", false, "fatal error: sync: unlock of unlocked mutex"},
		{"go-stack-overflow.txt", false, "runtime: goroutine stack exceeds 16777216-byte limit"},
		{"go-concurrent-map.txt", false, "fatal error: concurrent map writes"},
		{"go-nil-deref.txt", false, "panic: runtime error: invalid memory address"},
		{"go-fault.txt", false, "fatal error: fault"},
		{"sigquit.txt", false, "SIGQUIT: quit"},
		{"worker-setup.txt", false, "corral worker: the parent's pipes are missing"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", "deaths", c.file))
			require.NoError(t, err)
			for _, size := range []int{len(text), 7} { // whole, and in pieces
				w := &worker{tenant: "acme", pid: 42, memory: 128 << 20, cmd: &exec.Cmd{}, stderr: &stderrWatch{}}
				for chunk := range slices.Chunk(text, size) {
					_, _ = w.stderr.Write(chunk)
				}
				w.waitErr = errors.New("exit status 2")
				err := w.deathError("invoke", "n")
				var le *sandbox.LimitError
				assert.Equal(t, c.memory, errors.As(err, &le), "the cap: %v", err)
				assert.Equal(t, c.memory, fault.Is(err, fault.BudgetExceeded), "kind: %v", err)
				assert.Equal(t, !c.memory, fault.Is(err, fault.Internal), "kind: %v", err)
				assert.Contains(t, err.Error(), c.cause)
				assert.Contains(t, err.Error(), `tenant "acme"`)

				w.memory = 0 // no cap: never a memory death
				assert.True(t, fault.Is(w.deathError("invoke", "n"), fault.Internal), "no cap")
			}
		})
	}
}
