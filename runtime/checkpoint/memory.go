package checkpoint

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
)

// Memory is a checkpoint store in memory, for tests and for processes that
// need no durability. It keeps each exec id's history in its encoded form,
// a snapshot and the deltas after it (Chain, Fold), exactly as the durable
// Store writes them, so that what Load returns (numbers as float64, for
// instance) is what a durable store would return, and a save costs what
// it changed. It obeys the same rules as Store and is safe for concurrent
// use. The zero value is not usable; call NewMemory.
type Memory struct {
	mu      sync.RWMutex
	records map[string]*memRecord
}

// memRecord is the history of one exec id.
type memRecord struct {
	mu      sync.Mutex
	gone    bool   // deleted: a save that finds it takes a new record
	snap    []byte // the last snapshot; nil until the first save succeeds
	snapSeq uint64
	deltas  []Entry // the deltas after it
	chain   Chain
}

var (
	_ agent.CheckpointStore   = (*Memory)(nil)
	_ agent.CheckpointLister  = (*Memory)(nil)
	_ agent.CheckpointDeleter = (*Memory)(nil)
)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{records: map[string]*memRecord{}} }

// record returns the record of a valid execID, creating it.
func (m *Memory) record(execID string) *memRecord {
	m.mu.RLock()
	r := m.records[execID]
	m.mu.RUnlock()
	if r != nil {
		return r
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r = m.records[execID]; r == nil {
		r = &memRecord{}
		m.records[execID] = r
	}
	return r
}

// Save validates cp and stores it: as a delta when cp.Changes follow the
// newest entry (DefaultPolicy), else as a snapshot replacing the history.
// A snapshot that fits in the memory of the one it replaces is written
// over it, so that saving whole records, which grow slowly, allocates
// nothing most of the time.
func (m *Memory) Save(ctx context.Context, cp agent.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return fault.FromContext(err, "save checkpoint")
	}
	if !plainExecID(cp.ExecID) {
		if err := ValidateExecID(cp.ExecID); err != nil {
			return fmt.Errorf("save checkpoint: %w", err)
		}
	}
	for {
		r := m.record(cp.ExecID)
		r.mu.Lock()
		if r.gone {
			r.mu.Unlock()
			continue
		}
		err := r.save(&cp)
		r.mu.Unlock()
		return err
	}
}

// save stores cp in r, whose lock is held.
func (r *memRecord) save(cp *agent.Checkpoint) error {
	if cp.Changes != nil && r.chain.deltaAllowed(cp) {
		e, err := r.chain.Next(cp)
		if err != nil {
			return fmt.Errorf("save checkpoint: %w", err)
		}
		if e.Kind == EntryDelta {
			r.deltas = append(r.deltas, e)
			r.chain.Commit(e, cp)
			return nil
		}
		r.adoptSnapshot(e.Data, cp)
		return nil
	}
	var buf [smallRecord]byte
	if r.saveVia(buf[:0], cp) || r.saveMedium(cp) {
		return nil
	}
	// A plain checkpoint gets here with a record too long for the buffers
	// (or one json.Marshal writes or rejects): it is measured at once.
	data, err := encode(cp, plainCheckpoint(cp))
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	r.adoptSnapshot(data, cp)
	return nil
}

// saveMedium is saveVia with a buffer of 8 KiB, for the records that do
// not fit in Save's (it is a function of its own so that Save does not
// clear 8 KiB of stack for every record).
func (r *memRecord) saveMedium(cp *agent.Checkpoint) bool {
	var buf [8 << 10]byte
	return r.saveVia(buf[:0], cp)
}

// saveVia writes the record of cp into buf, a buffer on the caller's stack
// that it does not grow, and stores a copy of it; it reports false, and
// stores nothing, when appendPlain does.
func (r *memRecord) saveVia(buf []byte, cp *agent.Checkpoint) bool {
	rec, ok := appendPlain(buf, cp)
	if !ok {
		return false
	}
	r.putSnapshot(rec, cp)
	return true
}

// putSnapshot stores a copy of rec as the snapshot that replaces r's
// history, over the previous snapshot when it fits in its memory without
// wasting more than half of it.
func (r *memRecord) putSnapshot(rec []byte, cp *agent.Checkpoint) {
	// append rounds the capacity up to the allocator's size class, which
	// costs no more memory and leaves room for the next record to grow.
	if old := r.snap; old != nil && len(rec) <= cap(old) && cap(old) <= 2*len(rec) {
		r.snap = append(old[:0], rec...)
	} else {
		r.snap = append([]byte(nil), rec...)
	}
	r.commitSnapshot(cp)
}

// adoptSnapshot is putSnapshot for a rec in new memory, which it keeps.
func (r *memRecord) adoptSnapshot(rec []byte, cp *agent.Checkpoint) {
	r.snap = rec
	r.commitSnapshot(cp)
}

// commitSnapshot drops the deltas before the new snapshot r.snap.
func (r *memRecord) commitSnapshot(cp *agent.Checkpoint) {
	clear(r.deltas)
	r.deltas = r.deltas[:0]
	e := Entry{Kind: EntrySnapshot, Seq: r.chain.Seq() + 1, Data: r.snap}
	r.snapSeq = e.Seq
	r.chain.Commit(e, cp)
}

// Load returns the checkpoint of execID, or (nil, nil) when there is none.
func (m *Memory) Load(ctx context.Context, execID string) (*agent.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, "load checkpoint")
	}
	if err := ValidateExecID(execID); err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	m.mu.RLock()
	r := m.records[execID]
	m.mu.RUnlock()
	if r == nil {
		return nil, nil
	}
	r.mu.Lock()
	if r.snap == nil || r.gone {
		r.mu.Unlock()
		return nil, nil
	}
	entries := make([]Entry, 0, 1+len(r.deltas))
	// The snapshot's memory is written over by the next save: a copy. The
	// deltas are never changed once stored.
	entries = append(entries, Entry{Kind: EntrySnapshot, Seq: r.snapSeq, Data: slices.Clone(r.snap)})
	entries = append(entries, r.deltas...)
	r.mu.Unlock()
	cp, err := Fold(entries)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint %q: %w", execID, err)
	}
	return cp, nil
}

// List returns the exec ids that have a record, sorted.
func (m *Memory) List(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, "list checkpoints")
	}
	m.mu.RLock()
	records := maps.Clone(m.records)
	m.mu.RUnlock()
	ids := make([]string, 0, len(records))
	for id, r := range records {
		r.mu.Lock()
		if r.snap != nil && !r.gone {
			ids = append(ids, id)
		}
		r.mu.Unlock()
	}
	slices.Sort(ids)
	return ids, nil
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
	r := m.records[execID]
	delete(m.records, execID)
	m.mu.Unlock()
	if r != nil {
		r.mu.Lock()
		r.gone = true
		r.mu.Unlock()
	}
	return nil
}
