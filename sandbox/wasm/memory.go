package wasm

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// linearMemory backs one instance's memory. It starts small; its first
// growth past that reserves the whole limit at once (the memory's capacity
// is then its maximum, so growth never copies again), committed by the OS
// as the guest touches it. A growth past the limit of the running call is refused and
// remembered: it is how the runner knows that a guest failed for lack of
// memory.
type linearMemory struct {
	mu      sync.Mutex
	buf     []byte
	free    func()
	limit   uint64 // bytes the running call may use
	max     uint64 // the memory's maximum as wazero set it
	refused bool   // a growth past limit was refused
	grown   bool   // the initial size was allocated
}

var _ experimental.LinearMemory = (*linearMemory)(nil)

// allocatorFor returns the allocator of one instance, which starts with
// limit bytes.
func allocatorFor(mem *linearMemory) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		mem.mu.Lock()
		defer mem.mu.Unlock()
		mem.max = max
		// A memory starts on the Go heap at its declared minimum; its first
		// growth reserves the whole limit (one copy), so that modules that
		// do not grow never map memory and the others never copy again.
		mem.buf = nil
		return mem
	})
}

// Reallocate grows the memory to size bytes, or refuses (nil) past the
// limit, the first call (the declared minimum) included: the runner
// refuses a module whose minimum is past the limit before instantiating
// it, so a refusal here is a defence that never lets memory past the
// limit be allocated.
func (m *linearMemory) Reallocate(size uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if size > m.limit {
		m.refused = true
		return nil
	}
	first := !m.grown
	m.grown = true
	if first {
		m.buf = make([]byte, size)
		return m.buf
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	nb, free := reserveBytes(max(size, min(m.max, m.limit)))
	nb = nb[:size]
	copy(nb, m.buf)
	m.release()
	m.buf, m.free = nb, free
	return m.buf
}

// Free releases the reserved bytes.
func (m *linearMemory) Free() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.release()
	m.buf = nil
}

func (m *linearMemory) release() {
	if m.free != nil {
		m.free()
		m.free = nil
	}
}

// setLimit sets the limit of the next call and forgets an earlier refusal.
func (m *linearMemory) setLimit(limit uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.limit, m.refused = limit, false
}

// size is the memory's current size in bytes.
func (m *linearMemory) size() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return uint64(len(m.buf))
}

// exhausted reports whether the running call asked for more memory than
// its limit, or filled the memory to its maximum.
func (m *linearMemory) exhausted() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused || (m.grown && uint64(len(m.buf))+pageSize > min(m.max, m.limit))
}

const pageSize = 1 << 16
