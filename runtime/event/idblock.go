package event

import (
	"math/rand/v2"
	"sync"
	"time"
	"unsafe"
)

// IDBlock makes ids as NewIDAt does, carved from blocks of memory that
// hold several: one allocation for a block of ids instead of one per id.
// A source of many events, such as a graph run publishing two step events
// per node, keeps one. The blocks grow from minIDBlock to maxIDBlock ids,
// so a source that makes few ids allocates little; an id that outlives
// its source keeps its block (at most maxIDBlock*IDLen bytes) alive.
//
// An IDBlock is safe for concurrent use; the zero IDBlock is ready.
type IDBlock struct {
	mu   sync.Mutex
	free []byte // the current block's unused bytes
	next int    // the size of the next block, in ids
}

const (
	minIDBlock = 8
	maxIDBlock = 32
)

// NewAt returns a new id for an envelope made at t (NewIDAt).
func (b *IDBlock) NewAt(t time.Time) string {
	hi, lo := uint64(t.UnixNano()), rand.Uint32()
	b.mu.Lock()
	if len(b.free) < IDLen {
		b.next = min(max(2*b.next, minIDBlock), maxIDBlock)
		b.free = make([]byte, b.next*IDLen)
	}
	out := (*[IDLen]byte)(b.free)
	b.free = b.free[IDLen:]
	b.mu.Unlock()
	// The bytes are this call's alone, written once here and never
	// again: the string made over them is immutable, as a string must be.
	putID(out, hi, lo)
	return unsafe.String(&out[0], IDLen)
}
