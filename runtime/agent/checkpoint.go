package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
)

// Checkpoint is a saved point of a run from which it can resume.
type Checkpoint struct {
	ExecID            string            `json:"exec_id"`
	Steps             []string          `json:"steps,omitempty"`
	Iteration         int               `json:"iteration"`
	Board             *Board            `json:"board"`
	Payload           json.RawMessage   `json:"payload,omitempty"`
	Attributes        map[string]string `json:"attributes,omitempty"`
	Timestamp         time.Time         `json:"timestamp"`
	OriginalStartedAt time.Time         `json:"original_started_at,omitzero"`
	SpecVersion       string            `json:"spec_version,omitempty"`
	// Changes, when set, tells the store what changed on Board since an
	// earlier checkpoint of the same exec id (BoardChanges). It is never
	// part of a record; Load returns it nil.
	Changes *BoardChanges `json:"-"`
}

// Validate checks the required fields: a non-blank exec id, a board, a
// payload that is valid JSON when present, and an iteration that is not
// negative. The error is of kind Validation.
func (c Checkpoint) Validate() error {
	if strings.TrimSpace(c.ExecID) == "" {
		return fault.New(fault.Validation, "checkpoint", "exec_id is required")
	}
	if c.Board == nil {
		return fault.New(fault.Validation, "checkpoint", "%s: board is required", c.ExecID)
	}
	if len(c.Payload) > 0 && !json.Valid(c.Payload) {
		return fault.New(fault.Validation, "checkpoint", "%s: payload is not valid JSON", c.ExecID)
	}
	if c.Iteration < 0 {
		return fault.New(fault.Validation, "checkpoint", "%s: iteration must be >= 0", c.ExecID)
	}
	return nil
}

// Clone returns a deep copy of c: steps, board, payload and attributes are
// copied, so changing the copy never changes c. Nil stays nil.
func (c Checkpoint) Clone() Checkpoint {
	out := c
	out.Steps = slices.Clone(c.Steps)
	out.Board = c.Board.Clone()
	out.Payload = bytes.Clone(c.Payload)
	out.Attributes = maps.Clone(c.Attributes)
	out.Changes = c.Changes.Clone()
	return out
}

// CheckpointStore keeps the newest checkpoint of each exec id.
//
// Rules every implementation obeys (checkpoint/checkpointtest checks them):
// Save replaces the record atomically and the later of two overlapping saves
// wins; Load returns the newest record, or (nil, nil) when there is none;
// both copy on the way in and out; the store is safe for concurrent use;
// an invalid checkpoint or exec id is a Validation error.
type CheckpointStore interface {
	Save(ctx context.Context, cp Checkpoint) error
	Load(ctx context.Context, execID string) (*Checkpoint, error)
}

// CheckpointLister is a store that can list its exec ids, sorted.
type CheckpointLister interface {
	List(ctx context.Context) ([]string, error)
}

// CheckpointDeleter is a store that can delete a record. Deleting a
// missing record is not an error.
type CheckpointDeleter interface {
	Delete(ctx context.Context, execID string) error
}
