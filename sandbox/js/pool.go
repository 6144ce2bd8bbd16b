package js

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

// A call gets a VM in two steps: it is admitted and takes one of the
// runtime's slots (acquire), then takes a VM no other call is using
// (fresh): the one last put back in the pool, else a spare prepared ahead,
// else one made there and then. finish gives both back, and release
// decides whether the VM may run another call.

// realmPool keeps the VMs that wait between calls, at most max of them, the
// last one put back handed out first (its memory is the likeliest still in
// the CPU's caches). A mutex rather than a channel: a call takes and
// returns a VM, and the lock costs a fraction of two channel operations.
//
// Tenants never share a VM: a VM is tagged with the tenant of its first
// call (call.tenant) and handed to calls of that tenant only. The tenants
// share the max: a VM put back into a full pool takes the place of the
// longest-waiting VM of another tenant, which is dropped. With one tenant
// the VM handed out is the last one, as without tenants.
type realmPool struct {
	mu   sync.Mutex
	max  int
	idle []*call
}

func newRealmPool(max int) *realmPool {
	return &realmPool{max: max, idle: make([]*call, 0, max)}
}

// get takes a waiting VM of tenant, the last put back, or returns nil
// when none waits.
func (p *realmPool) get(tenant string) *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.idle) - 1; i >= 0; i-- {
		if c := p.idle[i]; c.tenant == tenant {
			last := len(p.idle) - 1
			copy(p.idle[i:], p.idle[i+1:])
			p.idle[last] = nil
			p.idle = p.idle[:last]
			return c
		}
	}
	return nil
}

// put adds c to the waiting VMs, in place of the longest-waiting VM of
// another tenant when the pool is full, which it returns (dropped); it
// reports false, keeping nothing, when the pool is full of c's tenant's
// VMs.
func (p *realmPool) put(c *call) (kept bool, evicted *call) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= p.max {
		i := slices.IndexFunc(p.idle, func(o *call) bool { return o.tenant != c.tenant })
		if i < 0 {
			return false, nil
		}
		evicted = p.idle[i]
		p.idle = slices.Delete(p.idle, i, i+1)
	}
	p.idle = append(p.idle, c)
	return true, evicted
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
	for _, c := range p.idle {
		c.unwatchParent()
	}
	clear(p.idle)
	p.idle = p.idle[:0]
}

// acquire admits one call and takes a slot for it; leave must follow,
// told whether the call still holds its slot.
func (r *Runtime) acquire(ctx context.Context, op opName) error {
	if !r.admit() {
		return fault.New(fault.NotAvailable, op.String(), "runtime closed")
	}
	if err := r.slots.Take(ctx); err != nil {
		r.calls.Done()
		if errors.Is(err, sandbox.ErrSlotsClosed) {
			return fault.New(fault.NotAvailable, op.String(), "runtime closed")
		}
		return fault.Wrap(fault.NotAvailable, fault.FromContext(err, op.String()), op.String(),
			"no free slot in a pool of %d", r.slots.Size())
	}
	return nil
}

// tryAcquire is acquire without waiting: it reports false, admitting
// nothing, when the runtime is closed or no slot is free at once.
func (r *Runtime) tryAcquire() bool {
	if !r.admit() {
		return false
	}
	if !r.slots.TryTake() {
		r.calls.Done()
		return false
	}
	return true
}

// admit counts a call in, for Close to wait for; it reports false, counting
// nothing, when the runtime is closed.
func (r *Runtime) admit() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.calls.Add(1)
	return true
}

// leave ends a call acquire admitted, freeing its slot when it holds one.
func (r *Runtime) leave(held bool) {
	if held {
		r.slots.Leave()
	}
	r.calls.Done()
}

// realmUses is how many calls (scripts and expressions) one VM runs
// before it is replaced. What a VM gathers across calls that no call can
// read is bounded otherwise (the Symbol.for registry by
// maxSymbolKeyBytes, a script's functions by maxScriptFuncs): the count
// only renews VMs now and then, and a larger one spares the lock-down of
// a new VM (prepare: about 2 MB allocated, some milliseconds) and the
// garbage collection it makes.
const realmUses = 100_000

// fresh returns a realm no other call is using, for a call of tenant: a
// pooled one of that tenant when one is ready, else a spare prepared ahead
// (below), else one made now.
// A VM that comes from the spares or is made now is new: it takes the
// tenant's tag.
func (r *Runtime) fresh(tenant string) (*call, error) {
	if c := r.realms.get(tenant); c != nil {
		return c, nil
	}
	var c *call
	select {
	case c = <-r.spares:
	default:
		var err error
		if c, err = r.prepare(); err != nil {
			return nil, err
		}
	}
	c.tenant = tenant
	return c, nil
}

// finish ends c's call: the realm goes back to the pool (release) and
// the call leaves the runtime, freeing its slot if it holds one.
func (r *Runtime) finish(c *call) {
	held := c.slotHeld
	c.slotHeld = false
	r.release(c)
	r.leave(held)
}

// release ends c's call and returns the VM to the pool when it may run
// another: not after a stop (a limit, a signal, a cancel), an engine
// failure or code run by eval or Function (a global let, const or class it
// declared would outlive the global object), nor once its calls gave
// Symbol.for more than maxSymbolKeyBytes of keys, nor after realmUses
// calls.
func (r *Runtime) release(c *call) {
	c.uses++
	c.mu.Lock()
	c.ctx, c.parent = nil, nil
	c.mu.Unlock()
	c.board, c.abi, c.parallel, c.nodeType = sandbox.BoardView{}, nil, nil, ""
	if c.runInfo != (sandbox.RunInfo{}) {
		c.runInfo = sandbox.RunInfo{}
	}
	clear(c.hostErrors)
	if len(c.varKeys) > 0 {
		clear(c.varKeys)
		c.varKeys = c.varKeys[:0]
	}
	c.vm.SetGlobalObject(c.template)
	switch {
	case c.stopped.Load():
		c.unwatchParent()
		r.afterStop.Store(true)
		r.wantSpare()
		return
	case c.ranCode || c.broken || c.symbolKeyBytes > maxSymbolKeyBytes:
		c.unwatchParent()
		r.wantSpare()
		return
	case c.uses >= realmUses:
		c.unwatchParent()
		return // its replacement was asked for at half its calls
	case c.uses == realmUses/2:
		r.wantSpare()
	}
	kept, evicted := r.realms.put(c)
	if !kept {
		c.unwatchParent()
	}
	if evicted != nil {
		evicted.unwatchParent()
		r.wantSpare() // another tenant's VM was dropped
	}
}

// Replacing a VM means locking a new one down (realm.go: prepare), a
// millisecond or more. A runtime does it ahead, on a goroutine of its own,
// so that the call that finds no pooled VM rarely pays for it: a VM that
// has run half its calls asks for its replacement, and so does a VM that
// is dropped (after a stop, a failure, code run by eval or Function). The
// ready VMs wait in the runtime's spares, at most one per pool slot.
//
// The replacement of a VM dropped after a stop (a cancel, a deadline, an
// interrupt, a limit) waits spareAfterStop first: whoever stopped the call
// is waiting for its caller to return, and locking a VM down (CPU and a
// few MB allocated, which can start a GC) beside that return delayed it by
// about a millisecond on a 2-core machine, more under load
// (BenchmarkInterruptSpinningNode in engine/graph).
const spareAfterStop = 5 * time.Millisecond

// wantSpare asks the preparer for one more spare VM; a request beyond
// those already waiting is dropped.
func (r *Runtime) wantSpare() {
	select {
	case r.want <- struct{}{}:
	default:
	}
}

// prepareSpares is the preparer's loop: it prepares one VM per request
// while the spares have room, until the runtime closes. A VM that fails
// to prepare is not retried: the call that finds no VM prepares one
// itself and reports the failure.
func (r *Runtime) prepareSpares() {
	defer close(r.preparerDone)
	for {
		select {
		case <-r.closing:
			return
		case <-r.want:
		}
		select {
		case <-r.closing:
			return
		default:
		}
		if len(r.spares) == cap(r.spares) {
			continue
		}
		if r.afterStop.Swap(false) {
			t := time.NewTimer(spareAfterStop)
			select {
			case <-r.closing:
				t.Stop()
				return
			case <-t.C:
			}
		}
		c, err := r.prepare()
		if err != nil {
			continue
		}
		select {
		case r.spares <- c:
		default:
		}
	}
}

// drainSpares drops the VMs waiting in the pool and the spares.
func (r *Runtime) drainSpares() {
	r.realms.drain()
	for {
		select {
		case <-r.spares:
		default:
			return
		}
	}
}
