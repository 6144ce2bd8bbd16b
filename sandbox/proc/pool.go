package proc

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
)

// tenantPool is the workers of one tenant: at most MaxWorkers, the idle
// ones ready for a call. No worker ever serves another tenant.
type tenantPool struct {
	r      *Runtime
	tenant string
	tokens chan struct{} // one per call running on the pool's workers

	mu     sync.Mutex
	idle   []*worker // ready, the most recently used last
	all    map[*worker]struct{}
	closed bool
	spares bool // the keeper should start spares
}

// poolLocked returns tenant's pool, making it; r.mu is held.
func (r *Runtime) poolLocked(tenant string) *tenantPool {
	p := r.tenants[tenant]
	if p == nil {
		p = &tenantPool{r: r, tenant: tenant, tokens: make(chan struct{}, r.o.MaxWorkers), all: map[*worker]struct{}{}}
		r.tenants[tenant] = p
	}
	return p
}

// take returns an idle worker, or starts one when none is ready; it waits
// while MaxWorkers calls of the tenant run, until ctx ends.
func (p *tenantPool) take(ctx context.Context) (*worker, error) {
	select {
	case p.tokens <- struct{}{}:
	case <-ctx.Done():
		return nil, fault.Wrap(fault.NotAvailable, ctx.Err(), "", "no worker free")
	case <-p.r.closing:
		return nil, fault.New(fault.NotAvailable, "", "the runtime is closed")
	}
	w, short := p.takeIdle()
	if short {
		p.r.wake()
	}
	if w != nil {
		return w, nil
	}
	w, err := p.start(ctx)
	if err != nil {
		<-p.tokens
		return nil, err
	}
	return w, nil
}

// takeIdle returns the most recently used live idle worker, or nil; it
// drops and reaps the ones that died while idle. short says the pool
// needs spares started.
func (p *tenantPool) takeIdle() (w *worker, short bool) {
	var dead []*worker
	defer func() {
		for _, w := range dead {
			w.reap()
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.idle) > 0 && w == nil {
		next := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if next.alive() {
			w = next
		} else {
			delete(p.all, next)
			dead = append(dead, next)
		}
	}
	return w, p.shortLocked()
}

// shortLocked reports whether the pool has fewer idle workers than
// Spares and room for more, and if so marks it for the keeper; p.mu is
// held.
func (p *tenantPool) shortLocked() bool {
	if !p.closed && len(p.idle) < p.r.o.Spares && len(p.all) < p.r.o.MaxWorkers {
		p.spares = true
	}
	return p.spares
}

// give takes a worker back after a call: ready again, or dropped when it
// died or was killed. It reports whether the pool needs spares started.
func (p *tenantPool) give(w *worker) (short bool) {
	p.mu.Lock()
	if w.alive() && !p.closed {
		w.lastUsed = time.Now()
		p.idle = append(p.idle, w)
	} else {
		delete(p.all, w)
		lost := !p.closed
		p.mu.Unlock()
		w.kill()
		<-w.exited
		if lost {
			workerLost(p.tenant)
		}
		p.mu.Lock()
	}
	short = p.shortLocked()
	p.mu.Unlock()
	<-p.tokens
	return short
}

// start starts a worker of the pool and adds it to all (not to idle).
func (p *tenantPool) start(ctx context.Context) (*worker, error) {
	r := p.r
	w, err := spawn(ctx, spawnConfig{
		path: r.o.Path, args: r.o.Args, worker: r.o.Worker, maxFrame: r.o.MaxFrameBytes, stderr: r.o.Stderr,
		start: startMsg{Settings: r.o.Settings, MemoryBytes: r.memoryFor(p.tenant), Tenant: p.tenant},
	})
	if err != nil {
		if ctx.Err() != nil { // the caller gave up while the worker started
			return nil, fault.FromContext(ctx.Err(), "start a worker")
		}
		return nil, fault.Wrap(fault.NotAvailable, err, "", "start a worker")
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		w.kill()
		<-w.exited
		return nil, fault.New(fault.NotAvailable, "", "the runtime is closed")
	}
	p.all[w] = struct{}{}
	p.mu.Unlock()
	return w, nil
}

// fillSpares starts workers until Spares are idle (within MaxWorkers).
func (p *tenantPool) fillSpares(ctx context.Context) {
	for {
		p.mu.Lock()
		need := p.spares && !p.closed && len(p.idle) < p.r.o.Spares && len(p.all) < p.r.o.MaxWorkers
		if !need {
			p.spares = false
		}
		p.mu.Unlock()
		if !need {
			return
		}
		w, err := p.start(ctx)
		if err != nil {
			p.mu.Lock()
			p.spares = false // the next call starts its own and reports why it cannot
			p.mu.Unlock()
			return
		}
		p.mu.Lock()
		w.lastUsed = time.Now()
		p.idle = slices.Insert(p.idle, 0, w) // spares are used after the warm ones
		p.mu.Unlock()
	}
}

// reapIdle stops the workers idle since before cutoff.
func (p *tenantPool) reapIdle(cutoff time.Time) {
	p.mu.Lock()
	var old []*worker
	p.idle = slices.DeleteFunc(p.idle, func(w *worker) bool {
		if w.lastUsed.Before(cutoff) || !w.alive() {
			old = append(old, w)
			delete(p.all, w)
			return true
		}
		return false
	})
	p.mu.Unlock()
	for _, w := range old {
		w.reap()
	}
}

// killAll closes the pool and kills every worker; wait waits for them.
func (p *tenantPool) killAll() {
	p.mu.Lock()
	p.closed = true
	p.idle = nil
	ws := make([]*worker, 0, len(p.all))
	for w := range p.all {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.kill()
	}
}

func (p *tenantPool) wait() {
	p.mu.Lock()
	ws := make([]*worker, 0, len(p.all))
	for w := range p.all {
		ws = append(ws, w)
	}
	p.all = map[*worker]struct{}{}
	p.mu.Unlock()
	for _, w := range ws {
		<-w.exited
	}
}

// reap kills w and waits for its exit.
func (w *worker) reap() {
	w.kill()
	<-w.exited
}

// keep is the keeper goroutine: it starts the spares of the pools that
// ran calls and stops workers idle for IdleTimeout, until Close.
func (r *Runtime) keep() {
	defer close(r.keeper)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the keeper's starts end with the runtime
		select {
		case <-r.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	tick := time.NewTicker(min(r.o.IdleTimeout/2, 30*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-r.closing:
			return
		case <-r.refill:
			for _, p := range r.pools() {
				p.fillSpares(ctx)
			}
		case now := <-tick.C:
			for _, p := range r.pools() {
				p.reapIdle(now.Add(-r.o.IdleTimeout))
			}
		}
	}
}

func (r *Runtime) pools() []*tenantPool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*tenantPool, 0, len(r.tenants))
	for _, p := range r.tenants {
		out = append(out, p)
	}
	return out
}

// WorkerInfo describes one live worker process.
type WorkerInfo struct {
	Tenant string
	Pid    int
	Idle   bool
	// MemoryBytes is the worker's cap (0: none).
	MemoryBytes int64
}

// Workers lists the live workers, by tenant.
func (r *Runtime) Workers() []WorkerInfo {
	var out []WorkerInfo
	for _, p := range r.pools() {
		p.mu.Lock()
		for w := range p.all {
			out = append(out, WorkerInfo{Tenant: p.tenant, Pid: w.pid, Idle: slices.Contains(p.idle, w), MemoryBytes: w.memory})
		}
		p.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int {
		if a.Tenant != b.Tenant {
			if a.Tenant < b.Tenant {
				return -1
			}
			return 1
		}
		return a.Pid - b.Pid
	})
	return out
}
