package js

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js/jsscan"
	"github.com/corral-rt/corral/sandbox/proc"
	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// Name is what Runtime.Name returns and the resource impl of Factory.
const Name = "js"

// DefaultProgramCacheSize is how many compiled scripts and expressions a
// Runtime keeps when Options.ProgramCacheSize is zero.
const DefaultProgramCacheSize = 256

// RegexpMatchTimeout bounds one match of a regular expression that needs
// backtracking (backreferences, lookaround). See docs/sandbox.md.
const RegexpMatchTimeout = 250 * time.Millisecond

// Options configure a Runtime. The zero value is usable.
type Options struct {
	// Limits are the runtime's limits; zero fields take the defaults
	// (sandbox.DefaultLimits). An Invocation or Evaluation may only
	// tighten them.
	Limits sandbox.Limits
	// PoolSize is how many calls (Invoke and Eval) run at once; more wait
	// for a free slot. Zero means GOMAXPROCS.
	PoolSize int
	// ProgramCacheSize is how many compiled scripts, and separately how
	// many compiled expressions, are kept. Zero means
	// DefaultProgramCacheSize.
	ProgramCacheSize int
	// HostMemoryBytes is the host memory ceiling: once the process's heap
	// passes three quarters of it, every running call is stopped
	// (memory_bytes), so that the process never reaches it. Zero derives
	// it from the host (sandbox.HostMemoryCeiling: GOMEMLIMIT, else the
	// cgroup's limit, else the machine's memory); negative turns the
	// ceiling off.
	HostMemoryBytes int64
}

// Runtime runs JavaScript node scripts and expressions in goja: pooled VMs
// whose built-ins are frozen, a new global object per call
// (docs/sandbox.md). It implements sandbox.Runtime and io.Closer and is
// safe for concurrent use.
type Runtime struct {
	limits   sandbox.Limits
	set      sandbox.Limits // the limits Options set, defaults not filled in
	slots    *sandbox.Slots
	programs *programCache
	exprs    *programCache
	kinds    []*goja.Program // each makes one async, generator or async generator function
	hidden   *goja.Program   // lists the built-ins no property path reaches

	realms *realmPool // pooled VMs, frozen, between calls
	// epoch is when the runtime was made; call deadlines count from it
	// (bindOp).
	epoch    time.Time
	watchdog *watchdog
	// spares are VMs prepared ahead (pool.go) by the preparer goroutine,
	// which takes its requests from want and closes preparerDone when it
	// ends.
	spares       chan *call
	want         chan struct{}
	preparerDone chan struct{}
	// afterStop says a VM was dropped after a stop since the preparer
	// last looked: its replacement waits spareAfterStop (pool.go).
	afterStop atomic.Bool
	// blocking names the host functions during which a call gives up its
	// slot (hostabi.Func.Blocking).
	blocking map[string]bool
	numbers  []any // newNumbers, read-only

	opsMu sync.Mutex
	ops   map[[2]string]string // error prefixes by verb and node

	mu       sync.Mutex
	closed   bool
	closing  chan struct{} // closed by Close: running calls stop
	calls    sync.WaitGroup
	closeErr error
}

var (
	_ sandbox.Runtime = (*Runtime)(nil)
	_ io.Closer       = (*Runtime)(nil)
)

// regexpTimeoutOnce guards the one-time setting of the backtracking
// regexp engine's match timeout (a process-wide setting of that engine).
var regexpTimeoutOnce sync.Once

// New returns a Runtime. Options are validated: negative limits, pool size
// or cache size are Validation errors.
func New(o Options) (*Runtime, error) {
	const op = "new js runtime"
	if err := o.Limits.Validate(); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "limits")
	}
	if o.PoolSize < 0 || o.ProgramCacheSize < 0 {
		return nil, fault.New(fault.Validation, op, "pool_size and program_cache_size must be >= 0, got %d and %d",
			o.PoolSize, o.ProgramCacheSize)
	}
	if o.PoolSize == 0 {
		o.PoolSize = runtime.GOMAXPROCS(0)
	}
	if o.ProgramCacheSize == 0 {
		o.ProgramCacheSize = DefaultProgramCacheSize
	}
	regexpTimeoutOnce.Do(func() {
		if regexp2.DefaultMatchTimeout > RegexpMatchTimeout {
			regexp2.DefaultMatchTimeout = RegexpMatchTimeout
		}
	})
	var kinds []*goja.Program
	for _, src := range []string{"(async function(){})", "(function*(){})", "(async function*(){})"} {
		// A kind the engine does not support yet fails to compile: there is
		// then no constructor of that kind to refuse.
		if p, err := goja.Compile("kind", src, false); err == nil {
			kinds = append(kinds, p)
		}
	}
	hidden, err := goja.Compile("intrinsics", hiddenIntrinsicsSource, false)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, op, "")
	}
	r := &Runtime{
		kinds:    kinds,
		hidden:   hidden,
		limits:   o.Limits.WithDefaults(),
		set:      o.Limits,
		programs: newProgramCache(o.ProgramCacheSize),
		exprs:    newProgramCache(o.ProgramCacheSize),
		realms:   newRealmPool(o.PoolSize),
		epoch:    time.Now(),
		ops:      map[[2]string]string{},
		watchdog: newWatchdog(hostCeiling(o.HostMemoryBytes)),
		blocking: hostabi.BlockingNames(),
		numbers:  newNumbers(),
		closing:  make(chan struct{}),

		spares:       make(chan *call, o.PoolSize),
		want:         make(chan struct{}, o.PoolSize),
		preparerDone: make(chan struct{}),
	}
	r.slots = sandbox.NewSlots(o.PoolSize, r.closing)
	go r.prepareSpares()
	return r, nil
}

// hostCeiling is the host memory ceiling of Options.HostMemoryBytes.
func hostCeiling(setting int64) int64 {
	switch {
	case setting > 0:
		return setting
	case setting < 0:
		return 0
	}
	return sandbox.HostMemoryCeiling()
}

// HostMemoryBytes returns the host memory ceiling the runtime holds the
// process under (0: none).
func (r *Runtime) HostMemoryBytes() int64 { return r.watchdog.ceiling }

// Name returns "js".
func (r *Runtime) Name() string { return Name }

// Limits returns the runtime's limits, defaults filled in. Every call runs
// under these, tightened by the call's own.
func (r *Runtime) Limits() sandbox.Limits { return r.limits }

// ConfiguredLimits returns the limits the runtime's options (its
// settings) set; a zero field was left to the default. The graph engine
// bounds a run by the run_time set here, not by a default.
func (r *Runtime) ConfiguredLimits() sandbox.Limits { return r.set }

// PoolSize returns how many calls run at once.
func (r *Runtime) PoolSize() int { return r.slots.Size() }

// Close stops the runtime: new calls fail with NotAvailable, running calls
// are stopped (Aborted) and Close waits for them to return, and for the
// watchdog and preparer goroutines. Close is idempotent and returns nil.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.closing)
	}
	r.mu.Unlock()
	r.watchdog.closeAll()
	r.calls.Wait()
	r.watchdog.shutdown()
	<-r.preparerDone
	r.drainSpares()
	return r.closeErr
}

// callLimits is the runtime's limits tightened by a call's own.
func (r *Runtime) callLimits(l sandbox.Limits, op opName, node string) (sandbox.Limits, error) {
	if l == (sandbox.Limits{}) || l == r.limits {
		return r.limits, nil // what most calls pass: nothing to check or tighten
	}
	if err := l.Validate(); err != nil {
		return sandbox.Limits{}, fault.Wrap(fault.Validation, err, op.String(), "node %q: limits", node)
	}
	return r.limits.Tighten(l), nil
}

// opName names a call in its errors (invoke node "x"); the text is made
// only when an error needs it.
type opName struct {
	rt         *Runtime
	verb, node string
}

// String returns the prefix of the call's errors.
func (o opName) String() string {
	if o.rt == nil {
		return o.verb
	}
	return o.rt.opFor(o.verb, o.node)
}

// opFor is the prefix of a call's errors: invoke node "x". The runtime
// keeps the last ones made, since the same nodes run again and again.
func (r *Runtime) opFor(verb, node string) string {
	key := [2]string{verb, node}
	r.opsMu.Lock()
	defer r.opsMu.Unlock()
	if op, ok := r.ops[key]; ok {
		return op
	}
	if len(r.ops) >= maxOps {
		clear(r.ops)
	}
	op := fmt.Sprintf("%s node %q", verb, node)
	r.ops[key] = op
	return op
}

// maxOps bounds the error prefixes a runtime keeps.
const maxOps = 1024

// Settings are the settings of a "sandbox.Runtime"/"js" resource.
type Settings struct {
	// Limits are the runtime's limits; unset fields take the defaults.
	Limits LimitSettings `json:"limits"`
	// PoolSize is how many calls run at once (0: GOMAXPROCS).
	PoolSize int `json:"pool_size"`
	// ProgramCacheSize is how many compiled scripts are kept (0: 256).
	ProgramCacheSize int `json:"program_cache_size"`
	// HostMemoryBytes is the host memory ceiling (0: derived from the
	// host; negative: none).
	HostMemoryBytes int64 `json:"host_memory_bytes"`
	// Isolation is where calls run: IsolationInProcess (the default) or
	// IsolationProcess, in worker processes of this same executable, one
	// tenant per worker, memory capped by the kernel (docs/sandbox.md,
	// "Process isolation"). The executable's main must call
	// ServeWorkerIfChild.
	Isolation string `json:"isolation"`
	// Process configures the workers of IsolationProcess.
	Process proc.Settings `json:"process"`
}

// The values of Settings.Isolation.
const (
	IsolationInProcess = "in_process"
	IsolationProcess   = "process"
)

// ServeWorkerIfChild makes this executable able to host the workers of
// isolation: process. Call it first thing in main (and in TestMain of a
// test binary that uses process isolation): in a normal process it
// returns at once; in a worker it serves calls until its parent goes away
// and exits, never returning.
func ServeWorkerIfChild() {
	proc.ServeIfChild(Name, func(raw json.RawMessage) (sandbox.Runtime, error) {
		s, err := resource.DecodeTyped[Settings](raw)
		if err != nil {
			return nil, err
		}
		limits, err := s.Limits.Limits()
		if err != nil {
			return nil, err
		}
		return New(Options{Limits: limits, PoolSize: 1, ProgramCacheSize: s.ProgramCacheSize, HostMemoryBytes: s.HostMemoryBytes})
	})
}

// newProcess builds the runtime of isolation: process: a proc.Runtime
// whose workers build a one-slot in-process Runtime from s.
func newProcess(s Settings, limits sandbox.Limits) (*proc.Runtime, error) {
	inWorker := Settings{Limits: s.Limits, ProgramCacheSize: s.ProgramCacheSize, HostMemoryBytes: s.HostMemoryBytes}
	raw, err := json.Marshal(inWorker)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "", "settings")
	}
	o, err := s.Process.Options(Name, raw, limits)
	if err != nil {
		return nil, err
	}
	if o.MaxWorkers == 0 {
		o.MaxWorkers = s.PoolSize
	}
	o.Check = Check
	return proc.New(o)
}

// LimitSettings are sandbox.Limits as a document writes them.
type LimitSettings = sandbox.LimitSettings

// Factory returns the factory of kind "sandbox.Runtime", impl "js". It
// has no dependencies; its value is a *Runtime, or a *proc.Runtime in
// isolation: process, closed with the resource.
func Factory() resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: sandbox.Kind, Impl: Name}, newFromInput)
}

func newFromInput(ctx context.Context, in resource.Input) (any, error) {
	op := fmt.Sprintf("build script runtime %q", in.Name)
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, op)
	}
	s, err := resource.DecodeTyped[Settings](in.Settings)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	limits, err := s.Limits.Limits()
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	var rt any
	switch s.Isolation {
	case "", IsolationInProcess:
		rt, err = New(Options{Limits: limits, PoolSize: s.PoolSize, ProgramCacheSize: s.ProgramCacheSize,
			HostMemoryBytes: s.HostMemoryBytes})
	case IsolationProcess:
		rt, err = newProcess(s, limits)
	default:
		err = fault.New(fault.Validation, "", "settings: isolation: want %q or %q, got %q", IsolationInProcess, IsolationProcess, s.Isolation)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return rt, nil
}

// Check compiles s as Invoke compiles a node script before its first
// call — the source scan, the parse, the sandbox's checks of the syntax
// tree — and runs none of it (sandbox.Checker; corral validate). A script
// that does not compile is a *sandbox.CompileError (kind Validation) with
// the line and column of the script's own source when they are known.
func (r *Runtime) Check(_ context.Context, s sandbox.Script) error {
	return Check(s)
}

var _ sandbox.Checker = (*Runtime)(nil)

// Check is Runtime.Check without a runtime: it needs none, and the parent
// of isolation: process checks scripts with it before any worker runs them.
func Check(s sandbox.Script) error {
	if s.Source == "" && len(s.Module) > 0 {
		return fault.New(fault.Validation, "check "+s.Name, "the js runtime runs JavaScript source, not a WebAssembly module")
	}
	_, err := compileScript(s.Name, s.Source)
	if err == nil {
		return nil
	}
	ce := &sandbox.CompileError{Script: s.Name, Msg: err.Error()}
	var scan *jsscan.Error
	var list parser.ErrorList
	var one *parser.Error
	switch {
	case errors.As(err, &scan):
		ce.Line, ce.Column, ce.Msg = scan.Line, scan.Column, scan.Reason
	case errors.As(err, &list) && len(list) > 0:
		one = list[0]
	case errors.As(err, &one):
	}
	if one != nil {
		ce.Line, ce.Column, ce.Msg = one.Position.Line, one.Position.Column, one.Message
		if ce.Line == 1 {
			ce.Column = max(ce.Column-len(scriptPrefix), 1)
		}
	}
	return ce
}

// Floor is a benchmark baseline: one goja VM, made once, holding one
// small script function. Calling it n times costs what n node scripts
// would cost with no fresh VM, no guards, no globals and no host ABI: the
// floor that benchmarks of script nodes (and of chains of them) compare
// their cost with. A Floor is not safe for concurrent use.
type Floor struct {
	step  goja.Callable
	board goja.Value
}

// NewFloor makes the VM, its function and the object the function counts
// in.
func NewFloor() (*Floor, error) {
	vm := goja.New()
	v, err := vm.RunString(`(function step(board) { board.n = (board.n || 0) + 1; return board.n })`)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "new floor", "")
	}
	step, ok := goja.AssertFunction(v)
	if !ok {
		return nil, fault.New(fault.Internal, "new floor", "the step is not a function")
	}
	return &Floor{step: step, board: vm.NewObject()}, nil
}

// Call calls the function n times and returns the count it reached.
func (f *Floor) Call(n int) (int64, error) {
	var last goja.Value
	for range n {
		v, err := f.step(goja.Undefined(), f.board)
		if err != nil {
			return 0, fault.Wrap(fault.Internal, err, "floor", "")
		}
		last = v
	}
	if last == nil {
		return 0, nil
	}
	return last.ToInteger(), nil
}
