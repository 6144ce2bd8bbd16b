package js

import (
	"runtime"
	"runtime/metrics"
	"time"
)

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
