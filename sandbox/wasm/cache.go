package wasm

import (
	"context"
	"slices"
)

// DefaultMaxModules caps the compiled modules a Runtime keeps when
// Options.MaxModules is zero.
const DefaultMaxModules = 64

// The compiled modules of a Runtime are kept in least-recently-used order
// (r.order, the most recent last). Past r.maxModules, the least recently
// used modules that no call is using are released: their compiled code is
// closed, which frees it in the process-wide compilation cache once no
// other Runtime holds it. A module in use is never released; a Runtime
// holds more only while that many are in use at once. Closing a Runtime
// does not release its modules: they stay in the process-wide cache, so
// that a later Runtime (a rebuilt deployment, a test) compiles them from
// it.

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
