package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Name is what Runtime.Name returns and the resource impl of Factory.
const Name = "wasm"

// Engines a Runtime can run modules with.
const (
	EngineCompiler    = "compiler"    // ahead-of-time compilation to machine code (the default where supported)
	EngineInterpreter = "interpreter" // portable, slower
)

// DefaultMaxModuleBytes caps the size of a module when
// Options.MaxModuleBytes is zero.
const DefaultMaxModuleBytes = 64 << 20

// Options configure a Runtime. The zero value is usable.
type Options struct {
	// Limits are the runtime's limits; zero fields take the defaults
	// (sandbox.DefaultLimits). An Invocation may only tighten them. The
	// memory limit is also the ceiling of every module's memory.
	Limits sandbox.Limits
	// PoolSize is how many calls run at once; more wait for a free slot.
	// Zero means GOMAXPROCS.
	PoolSize int
	// MaxModuleBytes caps the size of a module; zero means
	// DefaultMaxModuleBytes.
	MaxModuleBytes int64
	// Bounds bound the shape of a module, checked before it is compiled;
	// zero fields take the defaults (DefaultModuleBounds).
	Bounds ModuleBounds
	// MaxModules caps the compiled modules the Runtime keeps: past it, the
	// least recently used one that no call is using is released. Zero
	// means DefaultMaxModules.
	MaxModules int
	// Engine is EngineCompiler (the default; the interpreter where the
	// compiler is not supported) or EngineInterpreter.
	Engine string
}

// Runtime runs WebAssembly node scripts in wazero. It implements
// sandbox.Runtime, sandbox.RunScoper and io.Closer and is safe for
// concurrent use.
type Runtime struct {
	limits    sandbox.Limits
	set       sandbox.Limits // the limits Options set, defaults not filled in
	engine    string
	maxModule int64
	bounds    bounds // what precheck holds a module to
	wz        wazero.Runtime
	hostNames []string // the functions of module "host"
	slots     *sandbox.Slots
	// blocking names the host functions during which a call gives up its
	// slot (hostabi.Func.Blocking).
	blocking map[string]bool

	mu         sync.Mutex
	modules    map[[32]byte]*module
	order      []*module // modules, least recently used first
	maxModules int
	hashes     map[moduleIdentity]identityEntry
	runs       map[string]*runScope
	closed     bool
	closing    chan struct{}   // closed by Close: running calls stop
	closeCtx   context.Context // cancelled by Close
	cancel     context.CancelFunc
	calls      sync.WaitGroup
	closeErr   error
}

var (
	_ sandbox.Runtime   = (*Runtime)(nil)
	_ sandbox.RunScoper = (*Runtime)(nil)
	_ io.Closer         = (*Runtime)(nil)
)

// sharedCache is the process-wide compilation cache: modules compiled by
// one Runtime are compiled again by another from the cache, keyed by the
// module's hash.
var sharedCache = sync.OnceValue(wazero.NewCompilationCache)

// New returns a Runtime. Options are validated: negative limits, pool
// size or module size, or an unknown engine are Validation errors.
func New(o Options) (*Runtime, error) {
	const op = "new wasm runtime"
	if err := o.Limits.Validate(); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "limits")
	}
	if o.PoolSize < 0 || o.MaxModuleBytes < 0 || o.MaxModules < 0 {
		return nil, fault.New(fault.Validation, op, "pool_size, max_module_bytes and max_modules must be >= 0, got %d, %d and %d",
			o.PoolSize, o.MaxModuleBytes, o.MaxModules)
	}
	if err := o.Bounds.validate(); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "bounds")
	}
	if o.MaxModules == 0 {
		o.MaxModules = DefaultMaxModules
	}
	if o.PoolSize == 0 {
		o.PoolSize = runtime.GOMAXPROCS(0)
	}
	if o.MaxModuleBytes == 0 {
		o.MaxModuleBytes = DefaultMaxModuleBytes
	}
	cfg, err := runtimeConfig(o.Engine)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "engine")
	}
	limits := o.Limits.WithDefaults()
	// The memory ceiling is the largest a 32-bit memory can be, so that
	// every growth reaches the instance's allocator, which holds each call
	// to its own memory limit and remembers a refusal (a growth past the
	// ceiling would be refused silently, and the failure could not be told
	// from any other). Capacity from max: the allocator reserves the
	// call's limit up front, so growth never copies.
	cfg = cfg.WithCloseOnContextDone(true).
		WithMemoryLimitPages(maxPages).
		WithMemoryCapacityFromMax(true).
		WithCompilationCache(sharedCache())
	ctx := context.Background()
	r := &Runtime{
		limits: limits, set: o.Limits, engine: o.Engine, maxModule: o.MaxModuleBytes, maxModules: o.MaxModules,
		bounds:   bounds{ModuleBounds: o.Bounds.withDefaults(), moduleBytes: o.MaxModuleBytes, memoryBytes: limits.MemoryBytes},
		wz:       wazero.NewRuntimeWithConfig(ctx, cfg),
		blocking: hostabi.BlockingNames(),
		modules:  map[[32]byte]*module{},
		hashes:   map[moduleIdentity]identityEntry{},
		runs:     map[string]*runScope{},
		closing:  make(chan struct{}),
	}
	r.slots = sandbox.NewSlots(o.PoolSize, r.closing)
	r.closeCtx, r.cancel = context.WithCancel(context.Background())
	if err := r.instantiateHost(ctx); err != nil {
		_ = r.wz.Close(ctx)
		r.cancel()
		return nil, fault.Wrap(fault.Internal, err, op, "host modules")
	}
	return r, nil
}

func runtimeConfig(engine string) (wazero.RuntimeConfig, error) {
	switch engine {
	case "", EngineCompiler:
		return wazero.NewRuntimeConfig(), nil
	case EngineInterpreter:
		return wazero.NewRuntimeConfigInterpreter(), nil
	}
	return nil, fmt.Errorf("want %q or %q, got %q", EngineCompiler, EngineInterpreter, engine)
}

// maxPages is the page count of a 4 GiB memory, the most a 32-bit memory
// can address.
const maxPages = 65536

// instantiateHost instantiates WASI (clock, random, stdout and stderr, no
// files, environment or arguments: see the module config) and the modules
// "host" and "corral".
func (r *Runtime) instantiateHost(ctx context.Context) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r.wz); err != nil {
		return err
	}
	names, err := r.instantiateCatalog(ctx)
	if err != nil {
		return err
	}
	r.hostNames = names
	return r.instantiateNodeAPI(ctx)
}

// Name returns "wasm".
func (r *Runtime) Name() string { return Name }

// Limits returns the runtime's limits, defaults filled in.
func (r *Runtime) Limits() sandbox.Limits { return r.limits }

// ConfiguredLimits returns the limits the runtime's options (its
// settings) set; a zero field was left to the default. The graph engine
// bounds a run by the run_time set here, not by a default.
func (r *Runtime) ConfiguredLimits() sandbox.Limits { return r.set }

// Bounds returns the runtime's module bounds, defaults filled in.
func (r *Runtime) Bounds() ModuleBounds { return r.bounds.ModuleBounds }

// Engine returns the engine modules run with.
func (r *Runtime) Engine() string {
	if r.engine == "" {
		return EngineCompiler
	}
	return r.engine
}

// Close stops the runtime: new calls fail with NotAvailable, running calls
// are stopped (Aborted), and Close waits for them before it releases the
// compiled modules and instances. Close is idempotent.
func (r *Runtime) Close() error {
	r.mu.Lock()
	first := !r.closed
	if first {
		r.closed = true
		close(r.closing)
		r.cancel()
	}
	r.mu.Unlock()
	r.calls.Wait()
	if first {
		r.mu.Lock()
		for _, s := range r.runs {
			s.closeIdle()
		}
		r.runs = map[string]*runScope{}
		r.closeErr = r.wz.Close(context.Background())
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeErr
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Eval is not available: the wasm runtime runs modules, not expressions.
// Graph conditions are evaluated by a JavaScript runtime.
func (r *Runtime) Eval(_ context.Context, ev sandbox.Evaluation) (any, error) {
	return nil, fault.New(fault.NotAvailable, opFor("eval", ev.Node),
		"the wasm runtime does not evaluate expressions; bind a js runtime for conditions")
}

func opFor(verb, node string) string { return fmt.Sprintf("%s node %q", verb, node) }

// acquire admits one call and takes a slot for it; leave must follow,
// told whether the call still holds its slot.
func (r *Runtime) acquire(ctx context.Context, op string) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fault.New(fault.NotAvailable, op, "runtime closed")
	}
	r.calls.Add(1)
	r.mu.Unlock()
	if err := r.slots.Take(ctx); err != nil {
		r.calls.Done()
		if errors.Is(err, sandbox.ErrSlotsClosed) {
			return fault.New(fault.NotAvailable, op, "runtime closed")
		}
		return fault.Wrap(fault.NotAvailable, fault.FromContext(err, op), op,
			"no free slot in a pool of %d", r.slots.Size())
	}
	return nil
}

// leave ends a call acquire admitted, freeing its slot when it holds one.
func (r *Runtime) leave(held bool) {
	if held {
		r.slots.Leave()
	}
	r.calls.Done()
}

// callBlocking makes a host call that may wait for as long as it takes
// (hostabi.Func.Blocking) without the call's slot, so that other calls,
// the one it waits for among them, can run; it takes a slot again before
// the guest continues. The wall time keeps counting meanwhile. A cancel,
// the wall time or the runtime's close while it waits for the slot stops
// the call. A call without a slot (none was taken for it) just calls.
func (st *callState) callBlocking(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if !st.slotHeld {
		return st.inv.ABI.Call(ctx, name, args)
	}
	st.rt.slots.Leave()
	st.slotHeld = false
	res, err := st.inv.ABI.Call(ctx, name, args)
	if serr := st.rt.slots.Take(ctx); serr != nil {
		switch {
		case errors.Is(serr, sandbox.ErrSlotsClosed) || st.rt.closeCtx.Err() != nil:
			st.halt(fault.New(fault.Aborted, st.op, "runtime closed"))
		case st.parent != nil && st.parent.Err() != nil:
			st.halt(fault.FromContext(st.parent.Err(), st.op))
		}
		st.halt(st.limitError(sandbox.LimitWallTime))
	}
	st.slotHeld = true
	return res, err
}

// Settings are the settings of a "sandbox.Runtime"/"wasm" resource.
type Settings struct {
	// Limits are the runtime's limits; unset fields take the defaults.
	Limits LimitSettings `json:"limits"`
	// PoolSize is how many calls run at once (0: GOMAXPROCS).
	PoolSize int `json:"pool_size"`
	// MaxModuleBytes caps a module's size (0: DefaultMaxModuleBytes).
	MaxModuleBytes int64 `json:"max_module_bytes"`
	// MaxModules caps the compiled modules kept (0: DefaultMaxModules).
	MaxModules int `json:"max_modules"`
	// ModuleBounds bound the shape of a module (max_functions, …), at the
	// same level as max_module_bytes; zero fields take the defaults.
	ModuleBounds
	// Engine is "compiler" (the default) or "interpreter".
	Engine string `json:"engine"`
}

// LimitSettings are sandbox.Limits as a document writes them.
type LimitSettings = sandbox.LimitSettings

// Factory returns the factory of kind "sandbox.Runtime", impl "wasm". It
// has no dependencies; its value is a *Runtime, closed with the resource.
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
	rt, err := New(Options{Limits: limits, PoolSize: s.PoolSize, MaxModuleBytes: s.MaxModuleBytes, MaxModules: s.MaxModules,
		Bounds: s.ModuleBounds, Engine: s.Engine})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return rt, nil
}
