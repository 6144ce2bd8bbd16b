package proc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

// Defaults of Options' zero fields.
const (
	// DefaultIdleTimeout is how long an idle worker is kept.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultSpares is how many ready workers a tenant's pool keeps.
	DefaultSpares = 1
	// MinMemoryBytes is the smallest memory cap a worker takes: an idle
	// js worker already maps about 110 MiB that RLIMIT_DATA counts (thread
	// stacks and heap arenas, docs/sandbox.md); below this it has no room
	// to run a call.
	MinMemoryBytes = 128 << 20
)

// Options configure a Runtime.
type Options struct {
	// Worker names the runner the workers serve: the name its
	// ServeIfChild hook answers to ("js"). Required.
	Worker string
	// Settings are the worker runtime's settings, handed to its Builder
	// as they are (JSON).
	Settings json.RawMessage
	// Limits are the runtime's limits, as the workers apply them (zero
	// fields take the defaults): the parent reads the wall time from them
	// to kill a worker that overruns it.
	Limits sandbox.Limits
	// MaxWorkers is how many workers of one tenant run calls at once;
	// more calls of the tenant wait. Zero means GOMAXPROCS.
	MaxWorkers int
	// Spares is how many started, idle workers each tenant's pool keeps
	// ready, so that a call does not wait for a start: zero means
	// DefaultSpares, negative none.
	Spares int
	// IdleTimeout is how long a worker may stay idle before it is stopped
	// (zero: DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MemoryBytes caps each worker's memory, in bytes, through the kernel
	// (RLIMIT_DATA; see docs/sandbox.md); zero means no cap, and a cap
	// under MinMemoryBytes is raised to it.
	MemoryBytes int64
	// MemoryFor, when not nil, gives a tenant's cap instead of MemoryBytes
	// (a tenant's memory_per_worker quota); 0 falls back to MemoryBytes.
	MemoryFor func(tenant string) int64
	// MaxFrameBytes bounds one message between parent and worker; zero
	// means DefaultMaxFrameBytes.
	MaxFrameBytes int
	// Path and Args are the worker's executable and arguments; empty Path
	// means this very executable (os.Executable), with no arguments.
	Path string
	Args []string
	// Stderr, when not nil, also receives what workers write on stderr.
	Stderr io.Writer
	// Name is what Runtime.Name returns; empty means Worker.
	Name string
	// Check, when not nil, makes the Runtime a sandbox.Checker: it checks a
	// script in the parent without running any of it (the js runtime
	// passes its compile check, which scans a source before it parses it).
	Check func(sandbox.Script) error
}

// Runtime is a sandbox.Runtime whose calls run in worker processes: one
// call at a time per worker, each worker serving one tenant. It is safe
// for concurrent use and implements io.Closer.
type Runtime struct {
	o      Options
	limits sandbox.Limits

	mu      sync.Mutex
	tenants map[string]*tenantPool
	closed  bool
	closing chan struct{}
	calls   sync.WaitGroup // running calls
	keeper  chan struct{}  // closed when the keeper goroutine ends
	refill  chan struct{}  // wakes the keeper

	// boundMemory is the tenant quota lookup BindWorkerMemory handed
	// over, read when a worker starts.
	boundMemory atomic.Pointer[func(tenant string) int64]
}

var (
	_ sandbox.Runtime = (*Runtime)(nil)
	_ io.Closer       = (*Runtime)(nil)
)

// New returns a Runtime and starts its keeper goroutine, which starts
// spare workers and stops idle ones; Close stops it. Workers start on
// demand, per tenant. Options are validated (Validation).
func New(o Options) (*Runtime, error) {
	const op = "new process runtime"
	if !supported {
		return nil, fault.New(fault.NotAvailable, op, "process isolation needs linux")
	}
	if o.Worker == "" {
		return nil, fault.New(fault.Validation, op, "no worker name")
	}
	if err := o.Limits.Validate(); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "limits")
	}
	if o.MaxWorkers < 0 || o.MemoryBytes < 0 || o.IdleTimeout < 0 || o.MaxFrameBytes < 0 {
		return nil, fault.New(fault.Validation, op, "max_workers, memory_per_worker, idle_timeout and the frame bound must be >= 0")
	}
	if o.MaxWorkers == 0 {
		o.MaxWorkers = runtime.GOMAXPROCS(0)
	}
	if o.Spares == 0 {
		o.Spares = DefaultSpares
	}
	o.Spares = min(max(o.Spares, 0), o.MaxWorkers)
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxFrameBytes == 0 {
		o.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if o.Name == "" {
		o.Name = o.Worker
	}
	if o.Path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fault.Wrap(fault.NotAvailable, err, op, "find the worker executable")
		}
		o.Path = exe
	}
	r := &Runtime{
		o: o, limits: o.Limits.WithDefaults(), tenants: map[string]*tenantPool{},
		closing: make(chan struct{}), keeper: make(chan struct{}), refill: make(chan struct{}, 1),
	}
	go r.keep()
	return r, nil
}

// Name returns Options.Name.
func (r *Runtime) Name() string { return r.o.Name }

// Limits returns the runtime's limits, defaults filled in.
func (r *Runtime) Limits() sandbox.Limits { return r.limits }

// Close stops the runtime: new calls fail with NotAvailable, running
// calls fail with Aborted as their workers are stopped, and Close waits
// for every call, worker and goroutine of the runtime. It is idempotent
// and returns nil.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.closing)
	}
	pools := make([]*tenantPool, 0, len(r.tenants))
	for _, p := range r.tenants {
		pools = append(pools, p)
	}
	r.mu.Unlock()
	<-r.keeper
	for _, p := range pools {
		p.killAll()
	}
	r.calls.Wait()
	for _, p := range pools {
		p.wait()
	}
	return nil
}

// BindWorkerMemory hands the runtime the memory_per_worker quota of each
// tenant (runtime.tenants in a deployment document): a tenant's workers
// started from then on are capped at it when it is set, and at
// Options.MemoryFor or MemoryBytes otherwise. The runtime calls it once
// per generation, after the resource is built (session.WorkerMemoryBinder).
func (r *Runtime) BindWorkerMemory(quota func(tenant string) int64) {
	r.boundMemory.Store(&quota)
}

// memoryFor is the cap of tenant's workers: the tenant's bound quota,
// else Options.MemoryFor, else Options.MemoryBytes.
func (r *Runtime) memoryFor(tenant string) int64 {
	n := r.o.MemoryBytes
	if r.o.MemoryFor != nil {
		if t := r.o.MemoryFor(tenant); t > 0 {
			n = t
		}
	}
	if q := r.boundMemory.Load(); q != nil && *q != nil {
		if t := (*q)(tenant); t > 0 {
			n = t
		}
	}
	if n > 0 && n < MinMemoryBytes {
		n = MinMemoryBytes
	}
	return n
}

// Invoke runs inv in a worker of inv.Run.Tenant. Host calls and
// parallel.cancelNode come back to this process, which runs them on
// inv.ABI and inv.Parallel. Besides the errors of the runner in the
// worker: a worker that dies under the call fails it with a memory_bytes
// *sandbox.LimitError when its memory cap stopped it, Internal otherwise;
// one that overruns the wall time is killed (a wall_time LimitError).
// Either way the worker is replaced. Outcome.CPU is the worker's CPU
// time for the call.
func (r *Runtime) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	m := &invokeMsg{
		Node: inv.Node, Type: inv.Type, Config: inv.Config, Board: inv.Board, BoardBytes: inv.BoardBytes,
		Script: scriptMsg{Name: inv.Script.Name, Source: inv.Script.Source, Module: inv.Script.Module,
			Entry: inv.Script.Entry, Config: inv.Script.Config},
		Run: inv.Run, Limits: inv.Limits, Parallel: inv.Parallel != nil,
	}
	if inv.ABI != nil {
		m.Functions = inv.ABI.Functions()
	}
	c := &conversation{op: "invoke", node: inv.Node, abi: inv.ABI, parallel: inv.Parallel,
		limits: r.callLimits(inv.Limits)}
	res, err := r.run(ctx, inv.Run.Tenant, c, frameInvoke, func(w *worker) any {
		m.ID = w.nextID
		if m.Same = w.sent.equal(m.Functions, m.Run, m.Limits); m.Same {
			m.Functions, m.Run, m.Limits = nil, sandbox.RunInfo{}, sandbox.Limits{}
		} else {
			w.sent = &callContext{functions: slices.Clone(m.Functions), run: m.Run, limits: m.Limits}
		}
		return m
	})
	out := sandbox.Outcome{CPU: time.Duration(res.CPUNs)}
	if err != nil {
		return out, err
	}
	out.Writes = res.writes()
	return out, decodeError(res.Err)
}

// Eval evaluates ev in a worker of ev.Tenant.
func (r *Runtime) Eval(ctx context.Context, ev sandbox.Evaluation) (any, error) {
	m := &evalMsg{Node: ev.Node, Expr: ev.Expr, Vars: ev.Vars, Limits: ev.Limits, Tenant: ev.Tenant}
	c := &conversation{op: "eval", node: ev.Node, limits: r.callLimits(ev.Limits)}
	res, err := r.run(ctx, ev.Tenant, c, frameEval, func(w *worker) any { m.ID = w.nextID; return m })
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, decodeError(res.Err)
	}
	return res.Value, nil
}

// callLimits are a call's limits as its worker applies them: the
// runtime's, tightened by the call's (the runtime's alone when the call's
// are invalid, which the worker refuses).
func (r *Runtime) callLimits(l sandbox.Limits) sandbox.Limits {
	if l.Validate() != nil {
		return r.limits
	}
	return r.limits.Tighten(l)
}

// run takes a worker of tenant, holds the conversation of one call on it
// and gives it back (or, when it died or was killed, drops it).
func (r *Runtime) run(ctx context.Context, tenant string, c *conversation, t frameType, msg func(w *worker) any) (resultMsg, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return resultMsg{}, fault.New(fault.NotAvailable, c.opName(), "tenant %q: the runtime is closed", tenant)
	}
	r.calls.Add(1)
	p := r.poolLocked(tenant)
	r.mu.Unlock()
	defer r.calls.Done()
	w, err := p.take(ctx)
	if err != nil {
		return resultMsg{}, fmt.Errorf("%s: tenant %q: %w", c.opName(), tenant, err)
	}
	w.nextID++
	res, err := c.hold(ctx, w, t, msg(w), r.closing)
	if p.give(w) {
		r.wake()
	}
	return res, err
}

// wake asks the keeper to look at the pools.
func (r *Runtime) wake() {
	select {
	case r.refill <- struct{}{}:
	default:
	}
}

// Check checks s with Options.Check (sandbox.Checker); a Runtime without
// one checks nothing here and leaves a script to its first call.
func (r *Runtime) Check(_ context.Context, s sandbox.Script) error {
	if r.o.Check == nil {
		return nil
	}
	return r.o.Check(s)
}

var _ sandbox.Checker = (*Runtime)(nil)
