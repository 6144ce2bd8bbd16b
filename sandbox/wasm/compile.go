package wasm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Exports every module must have (docs/hostabi.md).
const (
	ExportMemory     = "memory"
	ExportABIVersion = "corral_abi_version"
	ExportAlloc      = "corral_alloc"
	exportInitialize = "_initialize"
)

// module is one compiled module of a Runtime.
type module struct {
	ready    chan struct{} // closed when compiled or err is set
	key      [32]byte      // the module's SHA-256
	users    int           // calls using it (guarded by the Runtime's mu)
	compiled wazero.CompiledModule
	err      error
	// heavy modules have a start routine (_initialize: a Go guest's
	// runtime); their instances are reused within a run.
	heavy bool
	// minMemory is the largest declared minimum of the module's
	// memories, in bytes.
	minMemory uint64
	// tableBytes is what the tables the module's code grows reserve of
	// each call's memory limit (precheck).
	tableBytes uint64

	mu        sync.Mutex
	entries   map[string]error // checkExports by entry
	versioned bool             // an instance answered the right ABI version
}

// compile returns the compiled module of bin, compiling it once per
// Runtime (and once per process through the shared compilation cache).
// A module it returns without an error is in use until r.release(m).
func (r *Runtime) compile(ctx context.Context, node string, bin []byte) (*module, error) {
	if int64(len(bin)) > r.maxModule {
		return nil, fault.New(fault.Validation, "", "the module is %d bytes, more than the limit of %d", len(bin), r.maxModule)
	}
	r.mu.Lock()
	seen, known := r.hashes[identity(bin)]
	r.mu.Unlock()
	key := seen.key
	if !known {
		key = sha256.Sum256(bin)
	}
	r.mu.Lock()
	if !known {
		if len(r.hashes) >= maxIdentities {
			clear(r.hashes)
		}
		r.hashes[identity(bin)] = identityEntry{key: key, bin: bin}
	}
	m, ok := r.modules[key]
	if !ok {
		m = &module{ready: make(chan struct{}), key: key}
		r.modules[key] = m
	}
	r.touchLocked(m)
	evicted := r.evictLocked()
	r.mu.Unlock()
	closeModules(evicted)
	if ok {
		// Another call is compiling it: wait for it, or for this call's
		// context (a compile cannot be stopped; this call need not wait).
		select {
		case <-m.ready:
		case <-ctx.Done():
			r.release(m)
			return nil, fault.FromContext(ctx.Err(), "wait for the module to compile")
		}
		if m.err != nil {
			r.release(m)
		}
		return m, m.err
	}
	// wazero does not look at ctx while it decodes, validates and
	// compiles (docs/sandbox.md): the precheck's bounds are what keep the
	// time and the memory of a compile in proportion to the module.
	if shape, err := inspect(bin, r.bounds); err != nil {
		m.err = precheckError(node, err)
	} else if m.compiled, m.err = compileModule(ctx, r.wz, bin); m.err != nil {
		m.err = compileError(node, m.err, r.limits)
	} else {
		m.tableBytes = shape.tableBytes
	}
	if m.err != nil {
		r.mu.Lock()
		r.forgetLocked(key, m) // a context error must not stick
		r.mu.Unlock()
	} else {
		_, m.heavy = m.compiled.ExportedFunctions()[exportInitialize]
		m.minMemory = minMemory(m.compiled)
	}
	close(m.ready)
	if m.err != nil {
		r.release(m)
	}
	return m, m.err
}

// compileModule is wazero's CompileModule, with a panic turned into an
// error: wazero's validator has indexed past a slice on modules it should
// have refused (precheck refuses the ones known), and a panic on the
// caller's goroutine would end the process.
func compileModule(ctx context.Context, wz wazero.Runtime, bin []byte) (c wazero.CompiledModule, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("wazero failed on the module: %v", p)
		}
	}()
	return wz.CompileModule(ctx, bin)
}

// minMemory is the largest declared minimum of c's memories, exported or
// imported, in bytes.
func minMemory(c wazero.CompiledModule) uint64 {
	var n uint64
	for _, d := range c.ExportedMemories() {
		n = max(n, uint64(d.Min())*pageSize)
	}
	for _, d := range c.ImportedMemories() {
		n = max(n, uint64(d.Min())*pageSize)
	}
	return n
}

// compileError classifies a compile failure: a memory declared past the
// limit is a memory_bytes LimitError, anything else a Validation error.
func compileError(node string, err error, l sandbox.Limits) error {
	if strings.Contains(err.Error(), "pages") && strings.Contains(err.Error(), "over limit") {
		return &sandbox.LimitError{Limit: sandbox.LimitMemory, Node: node, Max: l.MemoryBytes}
	}
	return fault.Wrap(fault.Validation, err, "", "compile the module")
}

// precheckError names the node in a memory_bytes LimitError of the
// precheck; its Validation errors are as they are.
func precheckError(node string, err error) error {
	var le *sandbox.LimitError
	if errors.As(err, &le) {
		le.Node = node
	}
	return err
}

// maxIdentities bounds the module identities a Runtime remembers.
const maxIdentities = 256

// moduleIdentity is where a module's bytes are: the graph engine hands the
// same bytes to every call of a node, which then skips hashing them. The
// entry keeps the bytes alive, so that no other module can take their
// place while they are remembered. The bytes of a Script must not change
// once it has run.
type moduleIdentity struct {
	data *byte
	n    int
}

type identityEntry struct {
	key [32]byte
	bin []byte
}

func identity(bin []byte) moduleIdentity { return moduleIdentity{unsafe.SliceData(bin), len(bin)} }

// exportsFor is checkExports, remembered per entry.
func (m *module) exportsFor(entry string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err, ok := m.entries[entry]; ok {
		return err
	}
	err := m.checkExports(entry)
	if m.entries == nil {
		m.entries = map[string]error{}
	}
	if len(m.entries) < 1024 {
		m.entries[entry] = err
	}
	return err
}

// checkExports checks that m has the memory, the ABI exports and entry,
// each of the right type.
func (m *module) checkExports(entry string) error {
	fns := m.compiled.ExportedFunctions()
	want := []struct {
		name    string
		params  []api.ValueType
		results []api.ValueType
	}{
		{ExportABIVersion, nil, []api.ValueType{api.ValueTypeI32}},
		{ExportAlloc, []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
		{entry, []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, nil},
	}
	for _, w := range want {
		f, ok := fns[w.name]
		if !ok {
			return fault.New(fault.Validation, "", "the module does not export function %q", w.name)
		}
		if !sameTypes(f.ParamTypes(), w.params) || !sameTypes(f.ResultTypes(), w.results) {
			return fault.New(fault.Validation, "", "export %q has type %s, want %s", w.name,
				signature(f.ParamTypes(), f.ResultTypes()), signature(w.params, w.results))
		}
	}
	if _, ok := m.compiled.ExportedMemories()[ExportMemory]; !ok {
		return fault.New(fault.Validation, "", "the module does not export its memory as %q", ExportMemory)
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func signature(params, results []api.ValueType) string {
	name := func(ts []api.ValueType) string {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return name(params) + " -> " + name(results)
}

// DefaultMaxModules caps the compiled modules a Runtime keeps when
// Options.MaxModules is zero.
const DefaultMaxModules = 64

// touchLocked marks m as the most recently used module and counts a user.
func (r *Runtime) touchLocked(m *module) {
	m.users++
	if i := slices.Index(r.order, m); i >= 0 {
		r.order = slices.Delete(r.order, i, i+1)
	}
	r.order = append(r.order, m)
}

// forgetLocked removes m without closing it (a module that failed to
// compile).
func (r *Runtime) forgetLocked(key [32]byte, m *module) {
	if r.modules[key] == m {
		delete(r.modules, key)
	}
	if i := slices.Index(r.order, m); i >= 0 {
		r.order = slices.Delete(r.order, i, i+1)
	}
}

// release ends one use of m (from compile) and releases the modules past
// the cap.
func (r *Runtime) release(m *module) {
	r.mu.Lock()
	m.users--
	evicted := r.evictLocked()
	r.mu.Unlock()
	closeModules(evicted)
}

// evictLocked removes the least recently used modules not in use while
// more than r.maxModules are kept, and returns them to be closed.
func (r *Runtime) evictLocked() []*module {
	var out []*module
	for i := 0; i < len(r.order) && len(r.order) > r.maxModules; {
		m := r.order[i]
		if m.users > 0 {
			i++
			continue
		}
		r.order = slices.Delete(r.order, i, i+1)
		if r.modules[m.key] == m {
			delete(r.modules, m.key)
		}
		out = append(out, m)
	}
	return out
}

// closeModules releases the compiled code of modules no longer kept.
func closeModules(ms []*module) {
	for _, m := range ms {
		if m.compiled != nil {
			_ = m.compiled.Close(context.Background())
		}
	}
}
