package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
)

// Memory is a checkpoint store in memory, for tests and for processes that
// need no durability. It keeps each record in its encoded form, exactly as
// Store writes it, so that what Load returns (numbers as float64, for
// instance) is what a durable store would return. It obeys the same rules
// as Store and is safe for concurrent use. The zero value is not usable;
// call NewMemory.
type Memory struct {
	mu      sync.RWMutex
	records map[string]*[]byte // a pointer, so that a record is replaced with one map lookup
}

var (
	_ agent.CheckpointStore   = (*Memory)(nil)
	_ agent.CheckpointLister  = (*Memory)(nil)
	_ agent.CheckpointDeleter = (*Memory)(nil)
)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{records: map[string]*[]byte{}} }

// Save validates cp and replaces the record of cp.ExecID. A record that
// fits in the memory of the one it replaces is written over it, so that
// saving the records of a run, which grow slowly, allocates nothing most of
// the time.
func (m *Memory) Save(ctx context.Context, cp agent.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return fault.FromContext(err, "save checkpoint")
	}
	var buf [smallRecord]byte
	if m.saveVia(buf[:0], &cp) || m.saveMedium(&cp) {
		return nil
	}
	// A plain checkpoint gets here with a record too long for the buffers
	// (or one json.Marshal writes or rejects): it is measured at once.
	data, err := encode(&cp, plainCheckpoint(&cp))
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	m.mu.Lock()
	if p := m.records[cp.ExecID]; p != nil {
		*p = data
	} else {
		first := data // only this copy of the slice header moves to the heap
		m.records[cp.ExecID] = &first
	}
	m.mu.Unlock()
	return nil
}

// saveMedium is saveVia with a buffer of 8 KiB, for the records that do
// not fit in Save's (it is a function of its own so that Save does not
// clear 8 KiB of stack for every record).
func (m *Memory) saveMedium(cp *agent.Checkpoint) bool {
	var buf [8 << 10]byte
	return m.saveVia(buf[:0], cp)
}

// saveVia writes the record of cp into buf, a buffer on the caller's stack
// that it does not grow, and stores a copy of it; it reports false, and
// stores nothing, when appendPlain does.
func (m *Memory) saveVia(buf []byte, cp *agent.Checkpoint) bool {
	rec, ok := appendPlain(buf, cp)
	if !ok {
		return false
	}
	m.mu.Lock()
	m.putLocked(cp.ExecID, rec)
	m.mu.Unlock()
	return true
}

// putLocked stores a copy of rec as the record of execID, over the
// previous record when it fits in its memory without wasting more than
// half of it.
func (m *Memory) putLocked(execID string, rec []byte) {
	// append rounds the capacity up to the allocator's size class, which
	// costs no more memory and leaves room for the next record to grow.
	if p := m.records[execID]; p != nil {
		if old := *p; len(rec) <= cap(old) && cap(old) <= 2*len(rec) {
			*p = append(old[:0], rec...)
		} else {
			*p = append([]byte(nil), rec...)
		}
		return
	}
	data := append([]byte(nil), rec...)
	m.records[execID] = &data
}

// Load returns the record of execID, or (nil, nil) when there is none.
func (m *Memory) Load(ctx context.Context, execID string) (*agent.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, "load checkpoint")
	}
	if err := ValidateExecID(execID); err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	m.mu.RLock()
	p := m.records[execID]
	var data []byte
	if p != nil {
		data = bytes.Clone(*p) // Save may write over the record once the lock is released
	}
	m.mu.RUnlock()
	if p == nil {
		return nil, nil
	}
	return Decode(data)
}

// List returns the exec ids that have a record, sorted.
func (m *Memory) List(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, "list checkpoints")
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.records)), nil
}

// Delete removes the record of execID; a missing record is not an error.
func (m *Memory) Delete(ctx context.Context, execID string) error {
	if err := ctx.Err(); err != nil {
		return fault.FromContext(err, "delete checkpoint")
	}
	if err := ValidateExecID(execID); err != nil {
		return fmt.Errorf("delete checkpoint: %w", err)
	}
	m.mu.Lock()
	delete(m.records, execID)
	m.mu.Unlock()
	return nil
}
