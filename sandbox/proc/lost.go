package proc

import "sync"

// OnWorkerLost calls fn with the tenant of each worker that a call lost:
// the worker died under it (a crash, its memory cap, a signal from
// outside) or was killed for it (past its wall time, a cancel it
// ignored, a broken frame), so the pool replaces it. A worker stopped by
// Close or for being idle is not lost. The hook is process-wide, as the
// workers are: fn sees the workers of every Runtime of the process. fn
// runs on the goroutine of the call that lost the worker, after the
// worker has exited, and must not block. remove stops the calls; it is
// idempotent.
func OnWorkerLost(fn func(tenant string)) (remove func()) {
	if fn == nil {
		return func() {}
	}
	lostHooks.mu.Lock()
	defer lostHooks.mu.Unlock()
	if lostHooks.fns == nil {
		lostHooks.fns = map[uint64]func(string){}
	}
	lostHooks.next++
	id := lostHooks.next
	lostHooks.fns[id] = fn
	return func() {
		lostHooks.mu.Lock()
		defer lostHooks.mu.Unlock()
		delete(lostHooks.fns, id)
	}
}

var lostHooks struct {
	mu   sync.Mutex
	next uint64
	fns  map[uint64]func(string)
}

// workerLost tells the OnWorkerLost hooks that a call lost a worker of
// tenant.
func workerLost(tenant string) {
	lostHooks.mu.Lock()
	fns := make([]func(string), 0, len(lostHooks.fns))
	for _, fn := range lostHooks.fns {
		fns = append(fns, fn)
	}
	lostHooks.mu.Unlock()
	for _, fn := range fns {
		fn(tenant)
	}
}
