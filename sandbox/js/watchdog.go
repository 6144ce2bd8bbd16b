package js

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/sandbox"
)

// idleTicks is how many ticks without a call the watchdog waits before it
// sleeps: calls back to back do not wake it each time.
const idleTicks = 64

// watchdog bounds the memory of the running calls of a runtime: a call
// whose memory guard trips, and every call when the process nears the
// host's memory ceiling, is stopped (memory_bytes); closeAll stops every
// call when the runtime closes. (A call's wall time and its caller's
// context stop it on the event, through a timer and context.AfterFunc:
// call.watchStart.) One goroutine per runtime does it, ticking every
// memorySampleInterval while calls run and sleeping otherwise, so that a
// call costs a registration rather than a goroutine of its own.
//
// A tick reads runtime/metrics once and nothing else: it never waits for
// a garbage collection, nor for anything a running call can prolong, so
// that stopping calls is never held up by the call being stopped (a GC
// waits for a goroutine copying a huge string to reach a safe point). When
// a guard needs the live heap measured it asks for a GC, which runs on a
// goroutine of its own (requestGC), and decides at a later tick.
//
// The ticks do not have to come from the goroutine. Its timer can sit
// unserved for seconds on a starved machine: a Go timer is run by the
// processor it was set on, which a call busy copying huge strings keeps,
// while the other processor serves the runnable calls beside it. So a
// call that starts or ends looks at the guards itself when no look came
// for lateLook (lookIfLate): a doubling string beside other calls is
// seen by their goroutines, which run, whatever becomes of the watchdog's.
type watchdog struct {
	// looking serializes the looks (check): the goroutine's ticks and
	// the late looks calls take. lastLook is when the last one began, in
	// nanoseconds since born.
	looking  sync.Mutex
	born     time.Time
	lastLook atomic.Int64
	// lastRead is the heap the last look read, and when.
	lastRead atomic.Pointer[heapReading]

	mu sync.Mutex
	// calls are the watched calls, in no order; a call's watchAt is its
	// index. A slice rather than a map: registering a call, once per
	// call, hashes nothing.
	calls  []watched
	closed bool

	wake   chan struct{} // a call was registered
	quit   chan struct{} // closed by shutdown
	exited chan struct{} // closed when the goroutine ends
	snap   []watched     // a look's copy of calls (under looking)

	// ceiling is the host memory ceiling (Options.HostMemoryBytes), 0 for
	// none; the goroutine stops every call once the process's heap passes
	// ceilingShare of it.
	ceiling int64
	heap    heapReader // the looks' reader of runtime/metrics (under looking)
	// gcBusy is set while the goroutine of requestGC runs; gcs waits for
	// it. gcAsked counts the GCs asked for, and gcServed is the count of
	// asks made before the start of the last GC that goroutine completed.
	gcBusy   atomic.Bool
	gcs      sync.WaitGroup
	gcAsked  atomic.Uint64
	gcServed atomic.Uint64
	// epoch counts the ceiling's stops (under mu): a call registered
	// since the last one holds none of the garbage that stop left, and is
	// spared until the GC asked for then (ceilingAsk) has measured it.
	epoch      uint64
	ceilingAsk atomic.Uint64
}

// watch is what the watchdog needs to know of one call, copied at
// registration: the call's fields may change once it ends.
type watch struct {
	gen    uint64
	budget int64  // memory_bytes; 0 means no memory guard
	epoch  uint64 // the watchdog's epoch at registration
	// base is the heap as a look read it at most lateLook before the
	// call began, or nil: the guard's baseline, so that a first look
	// that comes late does not count what the call built by then as
	// where it started.
	base *heapStats
}

type watched struct {
	c *call
	w watch
}

func newWatchdog(ceiling int64) *watchdog {
	d := &watchdog{wake: make(chan struct{}, 1), born: time.Now(),
		quit: make(chan struct{}), exited: make(chan struct{}), ceiling: ceiling}
	go d.loop()
	return d
}

// add starts watching c's current call; remove must follow. A call added
// after closeAll is stopped at once.
func (d *watchdog) add(c *call, w watch) {
	now := d.sinceBorn()
	if r := d.lastRead.Load(); r != nil && now-r.at < int64(lateLook) {
		w.base = &r.heap
	}
	d.mu.Lock()
	closed := d.closed
	if !closed {
		w.epoch = d.epoch
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
	d.lookIfLate(now)
}

// remove stops watching c; a call not watched is ignored.
func (d *watchdog) remove(c *call) {
	d.removeCall(c)
	d.lookIfLate(d.sinceBorn())
}

func (d *watchdog) removeCall(c *call) {
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

// shutdown ends the goroutine and waits for it and for a GC it asked for.
// It is idempotent.
func (d *watchdog) shutdown() {
	d.mu.Lock()
	select {
	case <-d.quit:
	default:
		close(d.quit)
	}
	d.mu.Unlock()
	<-d.exited
	d.gcs.Wait()
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
			case <-t.C:
				if d.look() == 0 {
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

// lateLook is how long after the last look at the guards a call that
// starts or ends takes one itself: a few ticks, so that while the
// watchdog's goroutine keeps up no call pays for a look.
const lateLook = 4 * memorySampleInterval

// look is a tick: check, one at a time. A tick that comes while a call
// looks counts as a busy one and does not wait: the look in progress may
// be held up (its goroutine preempted), and the next tick comes anyway.
func (d *watchdog) look() int {
	if !d.looking.TryLock() {
		return 1
	}
	defer d.looking.Unlock()
	d.lastLook.Store(d.sinceBorn())
	return d.check()
}

// sinceBorn is the monotonic time since d was made, in nanoseconds.
func (d *watchdog) sinceBorn() int64 { return int64(time.Since(d.born)) }

// lookIfLate is the look a call takes on its own goroutine when the last
// one is older than lateLook at now (sinceBorn): the watchdog's goroutine
// is starved, or asleep for want of calls. It never waits for a look in
// progress.
func (d *watchdog) lookIfLate(now int64) {
	if now-d.lastLook.Load() < int64(lateLook) || !d.looking.TryLock() {
		return
	}
	defer d.looking.Unlock()
	now = d.sinceBorn()
	if now-d.lastLook.Load() < int64(lateLook) {
		return // another look came meanwhile
	}
	d.lastLook.Store(now)
	d.check()
}

// check reads the heap once, stops every watched call when the process
// nears the host ceiling, else looks at each call's guard; it returns how
// many calls there were. d.looking is held.
func (d *watchdog) check() int {
	d.mu.Lock()
	d.snap = append(d.snap[:0], d.calls...)
	epoch := d.epoch
	d.mu.Unlock()
	n := len(d.snap)
	if n == 0 {
		return 0
	}
	now := d.heap.read()
	d.lastRead.Store(&heapReading{heap: now, at: d.sinceBorn()})
	over := d.ceiling > 0 && now.inUse() > int64(float64(d.ceiling)*ceilingShare)
	// The heap the last stop left is garbage until a GC measures it: the
	// calls that started since then are not stopped for it.
	settling := d.gcServed.Load() < d.ceilingAsk.Load()
	wantGC, stopped := false, false
	for i, s := range d.snap {
		switch {
		case over && !(settling && s.w.epoch == epoch):
			s.c.stopGen(s.w.gen, func() error { return s.c.ceilingError(d.ceiling) })
			stopped = true
		case s.w.budget > 0:
			wantGC = d.checkMemory(now, s.c, s.w) || wantGC
		}
		d.snap[i] = watched{}
	}
	if stopped {
		d.mu.Lock()
		d.epoch++
		d.mu.Unlock()
		d.requestGC()
		d.ceilingAsk.Store(d.gcAsked.Load())
	} else if wantGC {
		d.requestGC()
	}
	return n
}

// checkMemory looks at one call's memory guard and stops the call when
// it trips; it reports whether the guard wants the live heap measured.
func (d *watchdog) checkMemory(now heapStats, c *call, w watch) bool {
	if c.mem.gen != w.gen {
		if w.base == nil {
			c.mem.reset(w.gen, w.budget, now)
			return false
		}
		c.mem.reset(w.gen, w.budget, *w.base) // and look at now
	}
	exceeded, wantGC := c.mem.exceeded(now, d.gcServed.Load())
	if wantGC {
		c.mem.asked = d.gcAsked.Load() + 1 // the ask requestGC makes
	}
	if exceeded {
		c.stopGen(w.gen, func() error { return c.limitError(sandbox.LimitMemory) })
		return false
	}
	return wantGC
}

// requestGC asks for a garbage collection, run on a goroutine of its
// own; the asks made while it runs are served by one more GC once it
// ends. shutdown waits for the goroutine. The watchdog's goroutine calls
// it, and so does a call stopped for memory as it ends (call.run): what
// it held is garbage, which a GC returns, and the live heap it then
// measures no longer counts it, for the guards of the next calls. (Close
// waits for the calls before shutdown waits for the goroutine.)
func (d *watchdog) requestGC() {
	d.gcAsked.Add(1)
	if !d.gcBusy.CompareAndSwap(false, true) {
		return
	}
	d.gcs.Add(1)
	go func() {
		defer d.gcs.Done()
		for {
			asked := d.gcAsked.Load()
			runtime.GC()
			d.gcServed.Store(asked)
			d.gcBusy.Store(false)
			if d.gcAsked.Load() == asked || !d.gcBusy.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// ceilingError is the error of a call stopped because the process neared
// the host memory ceiling: a memory_bytes LimitError.
func (c *call) ceilingError(ceiling int64) error {
	return fmt.Errorf("%s: the process neared the host memory ceiling of %d bytes: %w",
		c.op.String(), ceiling, c.limitError(sandbox.LimitMemory))
}

// ceilingShare is the share of the host ceiling past which the watchdog
// stops every call: the rest is headroom for what the calls allocate
// before they stop (up to a tick's worth, and a step in flight).
const ceilingShare = 0.75

// memorySampleInterval is how often the watchdog reads the heap.
const memorySampleInterval = 2 * time.Millisecond

// The runtime/metrics the watchdog reads.
const (
	metricHeapObjects = "/memory/classes/heap/objects:bytes" // allocated, including garbage not yet swept
	metricHeapLive    = "/gc/heap/live:bytes"                // marked live by the last GC
	metricGCCycles    = "/gc/cycles/total:gc-cycles"         // GC cycles completed
	metricStacks      = "/memory/classes/heap/stacks:bytes"  // goroutine stacks
)

// heapReading is a heapStats read at, in nanoseconds since the
// watchdog was made.
type heapReading struct {
	heap heapStats
	at   int64
}

// heapStats is one reading of the heap.
type heapStats struct {
	objects, live, stacks int64
	cycles                uint64
}

// inUse is what the process's heap holds: its objects (live or not yet
// swept) and the goroutines' stacks.
func (h heapStats) inUse() int64 { return h.objects + h.stacks }

// heapReader reads the heap through runtime/metrics, which never stops
// the world nor waits for a GC.
type heapReader struct {
	samples []metrics.Sample
}

func (r *heapReader) read() heapStats {
	if r.samples == nil {
		r.samples = []metrics.Sample{{Name: metricHeapObjects}, {Name: metricHeapLive},
			{Name: metricGCCycles}, {Name: metricStacks}}
	}
	metrics.Read(r.samples)
	val := func(i int) uint64 {
		if r.samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return r.samples[i].Value.Uint64()
	}
	return heapStats{objects: int64(val(0)), live: int64(val(1)), cycles: val(2), stacks: int64(val(3))}
}

// memoryGuard watches the process heap on behalf of one call. goja has no
// per-VM accounting, so the guard reads the heap of the whole process
// (runtime/metrics). It trips when the live heap, as the last GC measured
// it, exceeds the lowest live heap seen since the guard's first look by
// more than the budget. The live heap is only measured by a GC, so when
// more than the budget has been allocated since the last GC the guard
// asks for one (watchdog.requestGC) and looks again at the next ticks: a
// call is thus stopped after holding about its budget, plus what it
// allocates until that GC ends. Should that GC be held up (a GC waits for
// a goroutine inside a huge copy), the guard trips without it once
// runawayFactor times the budget was allocated since the last GC ended.
// Only the watchdog's looks use it (one at a time); its first look at a
// call is at the first tick after the call began (within
// memorySampleInterval), or at the call's start when the ticks are late.
//
// A GC that was running at the first look measured the heap before it;
// the guard trusts the live heap only from the second GC after that.
type memoryGuard struct {
	gen     uint64 // the generation of the call the guard watches
	budget  int64
	minLive int64
	start   uint64 // GC cycles at the first look
	cycles  uint64 // GC cycles at the last look
	sinceGC int64  // lowest allocated heap seen since the last GC
	asked   uint64 // the watchdog's count of GC asks at this guard's pending ask; 0 for none
}

// runawayFactor is how many times its budget a call may see allocated
// since the last GC, while the GC it asked for does not end, before the
// guard trips without it.
const runawayFactor = 4

// reset makes g watch the call of generation gen from now on.
func (g *memoryGuard) reset(gen uint64, budget int64, now heapStats) {
	g.gen, g.budget, g.asked = gen, budget, 0
	g.minLive, g.cycles, g.sinceGC, g.start = now.live, now.cycles, now.objects, now.cycles
}

// exceeded reports whether the budget is exceeded by the reading now,
// and whether the guard wants a GC to measure the live heap. served is
// the watchdog's count of GC asks served (watchdog.gcServed).
func (g *memoryGuard) exceeded(now heapStats, served uint64) (exceeded, wantGC bool) {
	if now.cycles != g.cycles {
		g.cycles, g.sinceGC = now.cycles, now.objects
	}
	g.sinceGC = min(g.sinceGC, now.objects)
	g.minLive = min(g.minLive, now.live)
	grown := now.live-g.minLive > g.budget
	// A cycle in progress when the call started marked what was live
	// before it (a previous call's garbage): only a cycle that began
	// after the start, the second one on, measures the call, or the GC
	// this guard asked for, which began after the ask.
	if g.asked != 0 && served >= g.asked {
		g.asked = 0
		if grown {
			return true, false
		}
	}
	if now.cycles >= g.start+2 && grown {
		return true, false
	}
	allocated := now.objects - g.sinceGC
	switch {
	case allocated <= g.budget:
		return false, false
	case allocated > runawayFactor*g.budget:
		return true, false
	}
	return false, g.asked == 0
}
