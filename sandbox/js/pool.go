package js

import "sync"

// realmPool keeps the VMs that wait between calls, at most max of them, the
// last one put back handed out first (its memory is the likeliest still in
// the CPU's caches). A mutex rather than a channel: a call takes and
// returns a VM, and the lock costs a fraction of two channel operations.
type realmPool struct {
	mu   sync.Mutex
	max  int
	idle []*call
}

func newRealmPool(max int) *realmPool {
	return &realmPool{max: max, idle: make([]*call, 0, max)}
}

// get takes a waiting VM, or returns nil when none waits.
func (p *realmPool) get() *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	c := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	return c
}

// put adds c to the waiting VMs; it reports false, keeping nothing, when
// the pool is full.
func (p *realmPool) put(c *call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= p.max {
		return false
	}
	p.idle = append(p.idle, c)
	return true
}

// len returns how many VMs wait.
func (p *realmPool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// drain drops every waiting VM.
func (p *realmPool) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.idle)
	p.idle = p.idle[:0]
}
