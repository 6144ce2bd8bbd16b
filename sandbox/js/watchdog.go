package js

import (
	"context"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/corral-rt/corral/sandbox"
)

// idleTicks is how many ticks without a call the watchdog waits before it
// sleeps: calls back to back do not wake it each time.
const idleTicks = 64

// watchdog stops the running calls of a runtime: a call past its wall
// time (a LimitError), a call whose caller's context ended (Aborted or
// Timeout), a call whose memory guard trips, and every call when the
// runtime closes. One goroutine per runtime does it, ticking every
// memorySampleInterval while calls run and sleeping otherwise, so that a
// call costs a registration rather than a goroutine and timers of its own;
// a stop lands within a tick of its cause.
type watchdog struct {
	mu sync.Mutex
	// calls are the watched calls, in no order; a call's watchAt is its
	// index. A slice rather than a map: registering a call, once per
	// call, hashes nothing.
	calls  []watched
	closed bool

	wake   chan struct{} // a call was registered
	quit   chan struct{} // closed by shutdown
	exited chan struct{} // closed when the goroutine ends
	snap   []watched     // the goroutine's copy of calls
}

// watch is what the watchdog needs to know of one call, copied at
// registration: the call's fields may change once it ends.
type watch struct {
	gen      uint64
	parent   context.Context
	deadline time.Time
	budget   int64 // memory_bytes; 0 means no memory guard
}

type watched struct {
	c *call
	w watch
}

func newWatchdog() *watchdog {
	d := &watchdog{wake: make(chan struct{}, 1),
		quit: make(chan struct{}), exited: make(chan struct{})}
	go d.loop()
	return d
}

// add starts watching c's current call; remove must follow. A call added
// after closeAll is stopped at once.
func (d *watchdog) add(c *call, w watch) {
	d.mu.Lock()
	closed := d.closed
	if !closed {
		c.watchAt = len(d.calls)
		d.calls = append(d.calls, watched{c, w})
	}
	d.mu.Unlock()
	if closed {
		c.stopGen(w.gen, c.runtimeClosed)
		return
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// remove stops watching c; a call not watched is ignored.
func (d *watchdog) remove(c *call) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := c.watchAt
	if i < 0 || i >= len(d.calls) || d.calls[i].c != c {
		return
	}
	last := len(d.calls) - 1
	if i != last {
		d.calls[i] = d.calls[last]
		d.calls[i].c.watchAt = i
	}
	d.calls[last] = watched{}
	d.calls = d.calls[:last]
	c.watchAt = -1
}

// closeAll stops every watched call and every call added later.
func (d *watchdog) closeAll() {
	d.mu.Lock()
	d.closed = true
	stops := slices.Clone(d.calls)
	d.mu.Unlock()
	for _, s := range stops {
		s.c.stopGen(s.w.gen, s.c.runtimeClosed)
	}
}

// shutdown ends the goroutine and waits for it. It is idempotent.
func (d *watchdog) shutdown() {
	d.mu.Lock()
	select {
	case <-d.quit:
	default:
		close(d.quit)
	}
	d.mu.Unlock()
	<-d.exited
}

func (d *watchdog) loop() {
	defer close(d.exited)
	t := time.NewTicker(memorySampleInterval)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-d.wake:
		case <-d.quit:
			return
		}
		t.Reset(memorySampleInterval)
		for idle := 0; idle < idleTicks; {
			select {
			case now := <-t.C:
				if d.check(now) == 0 {
					idle++
				} else {
					idle = 0
				}
			case <-d.quit:
				return
			}
		}
		t.Stop()
	}
}

// check looks at every watched call once and returns how many there were.
func (d *watchdog) check(now time.Time) int {
	d.mu.Lock()
	d.snap = append(d.snap[:0], d.calls...)
	d.mu.Unlock()
	for i, s := range d.snap {
		d.checkOne(now, s.c, s.w)
		d.snap[i] = watched{}
	}
	return len(d.snap)
}

func (d *watchdog) checkOne(now time.Time, c *call, w watch) {
	switch {
	case w.parent.Err() != nil:
		c.stopGen(w.gen, func() error { return c.contextStop(w.parent.Err()) })
		return
	case !now.Before(w.deadline):
		c.stopGen(w.gen, func() error { return c.limitError(sandbox.LimitWallTime) })
		return
	case w.budget <= 0:
		return
	}
	if c.mem.gen != w.gen || c.mem.samples == nil {
		c.mem.reset(w.gen, w.budget)
		return
	}
	if c.mem.exceeded() {
		c.stopGen(w.gen, func() error { return c.limitError(sandbox.LimitMemory) })
	}
}

// memorySampleInterval is how often a call's watchdog reads the heap.
const memorySampleInterval = 2 * time.Millisecond

// The runtime/metrics the memory guard reads.
const (
	metricHeapObjects = "/memory/classes/heap/objects:bytes" // allocated, including garbage not yet swept
	metricHeapLive    = "/gc/heap/live:bytes"                // marked live by the last GC
	metricGCCycles    = "/gc/cycles/total:gc-cycles"         // GC cycles completed
)

// heapStats is one reading of the heap.
type heapStats struct {
	objects, live int64
	cycles        uint64
}

// memoryGuard watches the process heap on behalf of one call. goja has no
// per-VM accounting, so the guard reads the heap of the whole process
// (runtime/metrics). It trips when the live heap, as the last GC measured
// it, exceeds the lowest live heap seen since the guard's first look by
// more than the budget. The live heap is only measured by a GC, so when
// more than the budget has been allocated since the last GC the guard
// forces one (runtime.GC) to measure it: a call is thus stopped after
// holding about its budget, plus what it allocates while that GC runs.
// Only the runtime's watchdog goroutine uses it; its first look at a call
// is at its first tick after the call began (within
// memorySampleInterval).
//
// A GC that was running at the first look measured the heap before it;
// the guard trusts the live heap only from the second GC after that, or
// from one it forced.
type memoryGuard struct {
	gen      uint64 // the generation of the call the guard watches
	budget   int64
	minLive  int64
	start    uint64 // GC cycles at the first look
	cycles   uint64 // GC cycles at the last look
	sinceGC  int64  // lowest allocated heap seen since the last GC
	samples  []metrics.Sample
	forceGCs int // GCs this guard forced
}

// reset makes g watch the call of generation gen from now on.
func (g *memoryGuard) reset(gen uint64, budget int64) {
	if g.samples == nil {
		g.samples = []metrics.Sample{{Name: metricHeapObjects}, {Name: metricHeapLive}, {Name: metricGCCycles}}
	}
	g.gen, g.budget, g.forceGCs = gen, budget, 0
	now := g.read()
	g.minLive, g.cycles, g.sinceGC, g.start = now.live, now.cycles, now.objects, now.cycles
}

func (g *memoryGuard) read() heapStats {
	metrics.Read(g.samples)
	val := func(i int) uint64 {
		if g.samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return g.samples[i].Value.Uint64()
	}
	return heapStats{objects: int64(val(0)), live: int64(val(1)), cycles: val(2)}
}

// exceeded reads the heap and reports whether the budget is exceeded.
func (g *memoryGuard) exceeded() bool {
	now := g.read()
	if now.cycles != g.cycles {
		g.cycles, g.sinceGC = now.cycles, now.objects
	}
	g.sinceGC = min(g.sinceGC, now.objects)
	g.minLive = min(g.minLive, now.live)
	// A cycle in progress when the call started marked what was live
	// before it (a previous call's garbage): only a cycle that began
	// after the start, the second one on, measures the call.
	if now.cycles >= g.start+2 && now.live-g.minLive > g.budget {
		return true
	}
	if now.objects-g.sinceGC <= g.budget {
		return false
	}
	runtime.GC()
	g.forceGCs++
	now = g.read()
	g.cycles, g.sinceGC = now.cycles, now.objects
	g.minLive = min(g.minLive, now.live)
	return now.live-g.minLive > g.budget
}
