package guest

import (
	"encoding/json"
	"fmt"
)

// ABIVersion is the version of the host ABI this package speaks; the host
// refuses a module whose version differs.
const ABIVersion = 1

// Error is an error the host returned for a call: its kind as a code
// ("policy_denied", "validation", "not_found", ...) and its message.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Input is what a node call receives.
type Input struct {
	Node   string          `json:"node"`   // the node id
	Type   string          `json:"type"`   // the node type
	Run    RunInfo         `json:"run"`    // the run the call belongs to
	Limits Limits          `json:"limits"` // the limits of this call
	Raw    json.RawMessage `json:"config"` // the node's config as JSON, after ${board} resolution
}

// Config returns the node's config, a fresh copy at every call: the config
// of a node cannot be changed by its script.
func (in Input) Config() map[string]any {
	out := map[string]any{}
	_ = json.Unmarshal(in.Raw, &out)
	return out
}

// DecodeConfig decodes the node's config into out.
func (in Input) DecodeConfig(out any) error {
	if len(in.Raw) == 0 {
		return nil
	}
	return json.Unmarshal(in.Raw, out)
}

// RunInfo identifies the run.
type RunInfo struct {
	RunID       string `json:"run_id"`
	TaskID      string `json:"task_id"`
	AgentID     string `json:"agent_id"`
	ContextID   string `json:"context_id"`
	ParentRunID string `json:"parent_run_id"`
}

// Limits are the limits of the call that concern the guest itself.
type Limits struct {
	StackDepth    int   `json:"stack_depth"`
	MemoryBytes   int64 `json:"memory_bytes"`
	MaxValueBytes int64 `json:"max_value_bytes"`
}

// Output is what a node function hands back: vars to set and messages to
// append to the main channel, written in that order after it returns.
type Output struct {
	Vars     map[string]any    // board vars to set
	Messages []json.RawMessage // messages (wire form) to append to the main channel
}

// result flags of a call's return value (docs/hostabi.md).
const (
	resultLenMask = 1<<32 - 1
	resultErrFlag = 1 << 32
)

// decodeResult turns a call's status and payload into a result or an
// *Error.
func decodeResult(isErr bool, payload []byte) (json.RawMessage, error) {
	if !isErr {
		return payload, nil
	}
	var e Error
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, &Error{Code: "internal", Message: fmt.Sprintf("malformed host error %q", payload)}
	}
	return nil, &e
}
