package agent

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/corral-rt/corral/runtime/message"
)

// MainChannel is the board channel that holds the conversation.
const MainChannel = "__main_channel"

// Request is what a turn asks of an agent.
type Request struct {
	RunID     string            `json:"run_id,omitempty"`
	ContextID string            `json:"context_id,omitempty"`
	Message   message.Message   `json:"message"`
	Inputs    map[string]any    `json:"inputs,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

// Clone returns a deep copy of r: the message, the inputs (as Board.Clone
// copies vars) and the metadata.
func (r Request) Clone() Request {
	out := r
	out.Message = r.Message.Clone()
	out.Inputs = cloneVars(r.Inputs)
	out.Metadata = maps.Clone(r.Metadata)
	return out
}

// Status is how a run ended.
type Status string

// The statuses.
const (
	StatusCompleted   Status = "completed"
	StatusInterrupted Status = "interrupted"
	StatusCanceled    Status = "canceled"
	StatusFailed      Status = "failed"
	StatusAborted     Status = "aborted"
)

// Result is what a run produced.
type Result struct {
	RunID     string            `json:"run_id"`
	Status    Status            `json:"status"`
	Output    []message.Message `json:"output,omitempty"`
	State     map[string]any    `json:"state,omitempty"`
	Err       error             `json:"-"`
	LastBoard *Board            `json:"-"`
	Attempts  int               `json:"attempts"`
	Committed bool              `json:"committed"`
	Usage     Usage             `json:"usage"`
}

// Run is the identity of one engine execution.
type Run struct {
	ID        string
	AgentID   string
	ContextID string
	// Tenant is the tenant the agent belongs to (Definition.TenantID).
	Tenant      string
	ParentRunID string
	Attempt     int
	ResumeFrom  *Checkpoint // set when the run resumes a parked checkpoint
	StartedAt   time.Time
	// Capabilities are the host capabilities the agent's document grants
	// its scripts (Definition.Capabilities); nil means the default set of
	// the host ABI, an empty list grants nothing.
	Capabilities []string
}

// Engine runs an agent. Execute reads and writes the board and returns the
// final one. Business outcomes are reported through the board and the
// error's kind (Interrupted, BudgetExceeded, ...); the agent layer turns
// them into a Result.
type Engine interface {
	Execute(ctx context.Context, run Run, host Host, board *Board) (*Board, error)
}

// EngineFunc adapts a function to an Engine.
type EngineFunc func(ctx context.Context, run Run, host Host, board *Board) (*Board, error)

// Execute calls f.
func (f EngineFunc) Execute(ctx context.Context, run Run, host Host, board *Board) (*Board, error) {
	return f(ctx, run, host, board)
}

// Board is a run's state: variables and named message channels. Values in
// Vars are JSON-compatible (nil, bool, float64, json.Number, string,
// []any, map[string]any and the integer types). A board is not safe for
// concurrent use; Clone copies it deeply (see Clone for the value shapes
// that are copied).
type Board struct {
	Vars     map[string]any               `json:"vars"`
	Channels map[string][]message.Message `json:"channels"`
}

// NewBoard returns an empty board.
func NewBoard() *Board {
	return &Board{Vars: map[string]any{}, Channels: map[string][]message.Message{}}
}

// Clone returns a deep copy of b; a nil board clones to nil. Nested
// map[string]any and []any values are copied all the way down, as are
// json.RawMessage, []byte, map[string]string, []map[string]any, slices of
// strings, ints, int64s, float64s and bools, messages and message slices.
// Other values are copied as they are, so pointers stay shared. The clone's
// Vars and Channels are never nil.
func (b *Board) Clone() *Board {
	if b == nil {
		return nil
	}
	out := &Board{Vars: cloneVars(b.Vars), Channels: make(map[string][]message.Message, len(b.Channels))}
	if out.Vars == nil {
		out.Vars = map[string]any{}
	}
	for k, v := range b.Channels {
		out.Channels[k] = message.CloneAll(v)
	}
	return out
}

// Channel returns the messages of channel name; a nil board has none. The
// slice is the board's own: clone it before keeping or changing it.
func (b *Board) Channel(name string) []message.Message {
	if b == nil {
		return nil
	}
	return b.Channels[name]
}

// Append adds messages to channel name.
func (b *Board) Append(name string, msgs ...message.Message) {
	if b.Channels == nil {
		b.Channels = map[string][]message.Message{}
	}
	b.Channels[name] = append(b.Channels[name], msgs...)
}

func cloneVars(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

// cloneValue deep-copies the JSON-compatible values a board holds, plus the
// slice and map shapes Go code commonly stores there. Other values (scalars,
// and anything else) are copied as they are.
func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return cloneVars(t)
	case []any:
		return cloneSlice(t, cloneValue)
	case []map[string]any:
		return cloneSlice(t, cloneVars)
	case map[string]string:
		return maps.Clone(t)
	case json.RawMessage:
		return slices.Clone(t)
	case []byte:
		return slices.Clone(t)
	case []string:
		return slices.Clone(t)
	case []int:
		return slices.Clone(t)
	case []int64:
		return slices.Clone(t)
	case []float64:
		return slices.Clone(t)
	case []bool:
		return slices.Clone(t)
	case message.Message:
		return t.Clone()
	case []message.Message:
		return message.CloneAll(t)
	}
	return v
}

func cloneSlice[E any](s []E, clone func(E) E) []E {
	if s == nil {
		return nil
	}
	out := make([]E, len(s))
	for i, e := range s {
		out[i] = clone(e)
	}
	return out
}
