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
// need no durability. It keeps each record in its encoded form, exactly as
// Store writes it, so that what Load returns (numbers as float64, for
// instance) is what a durable store would return. It obeys the same rules
// as Store and is safe for concurrent use. The zero value is not usable;
// call NewMemory.
type Memory struct {
	mu      sync.RWMutex
	records map[string][]byte
}

var (
	_ agent.CheckpointStore   = (*Memory)(nil)
	_ agent.CheckpointLister  = (*Memory)(nil)
	_ agent.CheckpointDeleter = (*Memory)(nil)
)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{records: map[string][]byte{}} }

// Save validates cp and replaces the record of cp.ExecID.
func (m *Memory) Save(ctx context.Context, cp agent.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return fault.FromContext(err, "save checkpoint")
	}
	data, err := Encode(cp)
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	m.mu.Lock()
	m.records[cp.ExecID] = data
	m.mu.Unlock()
	return nil
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
	data, ok := m.records[execID]
	m.mu.RUnlock()
	if !ok {
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
