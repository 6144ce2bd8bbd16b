//go:build linux

package proc

import (
	"fmt"
	"runtime/debug"
	"syscall"
	"time"
)

// supported says whether this platform runs workers.
const supported = true

// capMemory caps the worker's memory at n bytes (0: no cap): RLIMIT_DATA,
// which bounds the private writable mappings the Go heap is made of, so
// that an allocation past it fails and the Go runtime dies with "out of
// memory"; and the Go memory limit (GOMEMLIMIT) a little under it, so
// that the collector works hard before the cap is reached. RLIMIT_AS is
// left alone: the address space a Go process reserves is far larger than
// what it uses (docs/sandbox.md). Both the soft and the hard limit are
// set, so nothing in the worker can raise them again. It returns what it
// set, for errors and diagnostics.
func capMemory(n int64) (string, error) {
	if n <= 0 {
		return "none", nil
	}
	lim := &syscall.Rlimit{Cur: uint64(n), Max: uint64(n)}
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, lim); err != nil {
		return "", fmt.Errorf("setrlimit RLIMIT_DATA %d: %w", n, err)
	}
	soft := n - n/8
	debug.SetMemoryLimit(soft)
	return fmt.Sprintf("RLIMIT_DATA=%d GOMEMLIMIT=%d", n, soft), nil
}

// cpuTime is the process's user and system CPU time so far (rusage).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// workerAttr puts a worker in its own process group, so that a terminal's
// Ctrl-C reaches the parent only, which stops its workers. There is no
// parent-death signal: Linux sends it when the thread that started the
// worker exits, which in Go need not be when the process does; a worker
// whose parent is gone sees its input end and exits instead.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// pollable makes fd non-blocking, so that the Go runtime's poller reads
// and writes it rather than a thread blocked in a system call.
func pollable(fd int) { _ = syscall.SetNonblock(fd, true) }
