package agent

import (
	"context"
	"encoding/json"
	"maps"
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

// Clone returns a deep copy of r.
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
	ID          string
	AgentID     string
	ContextID   string
	ParentRunID string
	Attempt     int
	ResumeFrom  *Checkpoint // set when the run resumes a parked checkpoint
	StartedAt   time.Time
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
// []any, map[string]any and the integer types).
type Board struct {
	Vars     map[string]any               `json:"vars"`
	Channels map[string][]message.Message `json:"channels"`
}

// NewBoard returns an empty board.
func NewBoard() *Board {
	return &Board{Vars: map[string]any{}, Channels: map[string][]message.Message{}}
}

// Clone returns a deep copy of b; a nil board clones to nil.
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

// Channel returns the messages of channel name.
func (b *Board) Channel(name string) []message.Message { return b.Channels[name] }

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

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return cloneVars(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = cloneValue(e)
		}
		return out
	case json.RawMessage:
		return append(json.RawMessage(nil), t...)
	case []byte:
		return append([]byte(nil), t...)
	case []string:
		return append([]string(nil), t...)
	case message.Message:
		return t.Clone()
	}
	return v
}
