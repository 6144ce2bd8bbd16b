//go:build !linux

package proc

import (
	"errors"
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
