package wasm

import (
	"context"
	"fmt"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// ABIVersion is the version of the host ABI this runner speaks: a module's
// corral_abi_version must return it.
const ABIVersion = 1

// instance is one instantiated module. Calls on it are serialized by its
// owner (a call, or a run scope that lends it to one call at a time).
type instance struct {
	mod    api.Module
	alloc  api.Function
	mem    *linearMemory
	output *tail
	clock  *guestClock

	mu  sync.Mutex
	cur *callState
}

func (i *instance) current() *callState {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cur
}

func (i *instance) setCurrent(st *callState) {
	i.mu.Lock()
	i.cur = st
	i.mu.Unlock()
}

func (i *instance) close() { _ = i.mod.Close(context.Background()) }

// instantiate makes a new instance of m for the call st, with no files,
// environment or arguments, stdout and stderr kept as a bounded tail, and
// the host's deterministic clock and random source; then checks its ABI
// version.
func (r *Runtime) instantiate(ctx context.Context, m *module, st *callState) (*instance, error) {
	limit, ok := m.memoryLimit(st.limits)
	if !ok || m.minMemory > limit {
		// Refused before any guest code (a start function,
		// corral_abi_version) could run on memory past the limit.
		return nil, st.limitError(sandbox.LimitMemory)
	}
	inst := &instance{mem: &linearMemory{limit: limit}, output: &tail{}}
	inst.clock = &guestClock{inst: inst}
	inst.setCurrent(st)
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions(exportInitialize).
		WithStdout(inst.output).WithStderr(inst.output).
		WithWalltime(inst.clock.walltime, sys.ClockResolution(1_000_000)).
		WithNanotime(inst.clock.nanotime, sys.ClockResolution(1)).
		WithNanosleep(inst.clock.nanosleep).WithOsyield(func() {}).
		WithRandSource(inst.clock)
	ictx := experimental.WithMemoryAllocator(context.WithValue(ctx, callKey{}, st), allocatorFor(inst.mem))
	mod, err := instantiateModule(ictx, r.wz, m.compiled, cfg)
	if err != nil {
		if mod != nil {
			_ = mod.Close(context.Background())
		}
		return nil, st.failure(ctx, inst, err, "instantiate")
	}
	inst.mod = mod
	inst.alloc = mod.ExportedFunction(ExportAlloc)
	if err := inst.checkVersion(ictx, m); err != nil {
		inst.close()
		if st.stopReason() != nil || ctx.Err() != nil {
			return nil, st.failure(ctx, inst, err, "instantiate")
		}
		return nil, err
	}
	if inst.mem.exhausted() {
		inst.close()
		return nil, st.limitError(sandbox.LimitMemory)
	}
	return inst, nil
}

// memoryLimit is what a call under l may give the module's linear
// memory: memory_bytes less what the tables its code grows reserve
// (precheck), or false when they reserve more.
func (m *module) memoryLimit(l sandbox.Limits) (uint64, bool) {
	if m.tableBytes > uint64(l.MemoryBytes) {
		return 0, false
	}
	return uint64(l.MemoryBytes) - m.tableBytes, true
}

// instantiateModule is wazero's InstantiateModule, with a panic turned
// into an error: wazero indexes the first allocation of a memory without
// checking it, and the allocator refuses (nil) a minimum past the limit.
func instantiateModule(ctx context.Context, wz wazero.Runtime, c wazero.CompiledModule,
	cfg wazero.ModuleConfig) (mod api.Module, err error) {
	defer func() {
		if p := recover(); p != nil {
			mod, err = nil, fmt.Errorf("instantiate: %v", p)
		}
	}()
	return wz.InstantiateModule(ctx, c, cfg)
}

// checkVersion calls corral_abi_version, once per module.
func (i *instance) checkVersion(ctx context.Context, m *module) error {
	m.mu.Lock()
	done := m.versioned
	m.mu.Unlock()
	if done {
		return nil
	}
	f := i.mod.ExportedFunction(ExportABIVersion)
	stack := []uint64{0}
	if err := f.CallWithStack(ctx, stack); err != nil {
		return err
	}
	if v := api.DecodeI32(stack[0]); v != ABIVersion {
		return fault.New(fault.Validation, "", "the module speaks host ABI version %d, this host speaks version %d", v, ABIVersion)
	}
	m.mu.Lock()
	m.versioned = true
	m.mu.Unlock()
	return nil
}

// tail keeps the first and the last bytes a guest wrote to stdout and
// stderr, for error messages (a Go guest's fatal error comes first, its
// goroutine dump after).
type tail struct {
	mu   sync.Mutex
	head []byte
	buf  []byte
}

const tailBytes = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := tailBytes - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

// String is the output, or its head and tail when it was longer.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.head) < tailBytes || string(t.head) == string(t.buf) {
		return string(t.buf)
	}
	return string(t.head) + "\n…\n" + string(t.buf)
}

// Head is the start of the output.
func (t *tail) Head() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head)
}

func (t *tail) reset() {
	t.mu.Lock()
	t.head, t.buf = t.head[:0], t.buf[:0]
	t.mu.Unlock()
}

// runScope holds the idle instances of heavy modules for one run.
type runScope struct {
	mu     sync.Mutex
	refs   int
	closed bool
	idle   map[*module][]*instance
}

// BeginRun starts keeping instances of heavy modules (Go guests, whose
// runtime takes milliseconds to start) for the run: the run's calls of
// the same module reuse one instance each, one call at a time. end closes
// them. See sandbox.RunScoper.
func (r *Runtime) BeginRun(_ context.Context, run sandbox.RunInfo) (end func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || run.RunID == "" {
		return func() {}
	}
	s, ok := r.runs[run.RunID]
	if !ok {
		s = &runScope{idle: map[*module][]*instance{}}
		r.runs[run.RunID] = s
	}
	s.refs++
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			s.refs--
			last := s.refs == 0
			if last && r.runs[run.RunID] == s {
				delete(r.runs, run.RunID)
			}
			r.mu.Unlock()
			if last {
				s.closeIdle()
			}
		})
	}
}

func (r *Runtime) scope(runID string) *runScope {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[runID]
}

func (s *runScope) take(m *module) *instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.idle[m]
	if len(list) == 0 {
		return nil
	}
	inst := list[len(list)-1]
	s.idle[m] = list[:len(list)-1]
	return inst
}

// put keeps inst for the next call of the run, or closes it when the run
// has ended.
func (s *runScope) put(m *module, inst *instance) {
	s.mu.Lock()
	if !s.closed {
		s.idle[m] = append(s.idle[m], inst)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	inst.close()
}

func (s *runScope) closeIdle() {
	s.mu.Lock()
	s.closed = true
	idle := s.idle
	s.idle = map[*module][]*instance{}
	s.mu.Unlock()
	for _, list := range idle {
		for _, inst := range list {
			inst.close()
		}
	}
}
