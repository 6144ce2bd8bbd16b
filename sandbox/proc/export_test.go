package proc

import (
	"sync"
)

// FrameCounts counts the frames the parent exchanges with its workers
// while it is installed, by direction and type name.
type FrameCounts struct {
	mu sync.Mutex
	n  map[string]int
}

// CountFrames installs a FrameCounts until the returned stop is called.
// Tests that use it must not run in parallel with other tests.
func CountFrames() (*FrameCounts, func()) {
	c := &FrameCounts{n: map[string]int{}}
	tr := func(t frameType, out bool) {
		dir := "from-worker "
		if out {
			dir = "to-worker "
		}
		c.mu.Lock()
		c.n[dir+frameNames[t]]++
		c.mu.Unlock()
	}
	traceFrame.Store(&tr)
	return c, func() { traceFrame.Store(nil) }
}

// Snapshot returns the counts so far and resets them.
func (c *FrameCounts) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}

var frameNames = map[frameType]string{
	frameStart: "start", frameReady: "ready", frameInvoke: "invoke", frameEval: "eval", frameCancel: "cancel",
	frameHost: "host", frameHostReply: "hostReply", frameParallel: "parallel", frameParallelReply: "parallelReply",
	frameResult: "result",
}
