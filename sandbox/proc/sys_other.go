//go:build !linux

package proc

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// supported says whether this platform runs workers: process isolation
// needs Linux (RLIMIT_DATA as the memory cap, rusage, a parent-death
// signal).
const supported = false

func capMemory(n int64) (string, error) {
	if n <= 0 {
		return "none", nil
	}
	return "", errors.New("memory caps need linux")
}

func cpuTime() time.Duration { return 0 }

func workerAttr() *syscall.SysProcAttr { return nil }

func pollable(int) {}

func quietRead(f *os.File) io.Reader  { return f }
func quietWrite(f *os.File) io.Writer { return f }
