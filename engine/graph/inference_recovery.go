package graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
)

// The defaults of the undefined tool recovery keys.
const (
	// DefaultRecoverPendingKey is the board var an inference node with
	// undefined_tool_recovery sets to whether it answered undefined tool
	// calls, unless recover_pending_key says otherwise.
	DefaultRecoverPendingKey = "recover_pending"
	// DefaultRecoverCountKey is the board var that counts the recoveries
	// of a run, unless recover_count_key says otherwise.
	DefaultRecoverCountKey = "recover_count"
	// DefaultMaxRecoveries is undefined_tool_recovery.max_per_run when it
	// is absent.
	DefaultMaxRecoveries = 2
)

// ErrUndefinedTool is the error of a reply that calls a tool the node did
// not offer (REF 8.7): a Validation error, matched with errors.Is.
var ErrUndefinedTool = fault.New(fault.Validation, "", "undefined_tool")

// RecoveryConfig is InferenceConfig.UndefinedToolRecovery.
type RecoveryConfig struct {
	// Enabled answers undefined tool calls with error results instead of
	// failing the node.
	Enabled bool `json:"enabled,omitempty"`
	// MaxPerRun caps the recoveries of a run (counted in recover_count_key);
	// default 2. The call after the last recovery fails with
	// ErrUndefinedTool.
	MaxPerRun *int `json:"max_per_run,omitempty"`
}

// recovery is the checked recovery config of a handler.
type recovery struct {
	enabled    bool
	max        int
	pendingKey string
	countKey   string
}

// buildRecovery checks the recovery keys of c.
func buildRecovery(c InferenceConfig) (recovery, error) {
	r := recovery{max: DefaultMaxRecoveries, pendingKey: c.RecoverPendingKey, countKey: c.RecoverCountKey}
	if r.pendingKey == "" {
		r.pendingKey = DefaultRecoverPendingKey
	}
	if r.countKey == "" {
		r.countKey = DefaultRecoverCountKey
	}
	if c.UndefinedToolRecovery != nil {
		r.enabled = c.UndefinedToolRecovery.Enabled
		if m := c.UndefinedToolRecovery.MaxPerRun; m != nil {
			if *m < 0 {
				return r, fault.New(fault.Validation, "", "undefined_tool_recovery.max_per_run: must not be negative, got %d", *m)
			}
			r.max = *m
		}
	}
	if r.pendingKey == r.countKey {
		return r, fault.New(fault.Validation, "", "recover_pending_key and recover_count_key are both %q", r.pendingKey)
	}
	return r, nil
}

// undefinedCalls returns the calls of reply whose tool is not in defs.
func undefinedCalls(reply message.Message, defs []tool.Definition) []message.ToolCall {
	var out []message.ToolCall
	for _, call := range reply.ToolCalls() {
		if !slices.ContainsFunc(defs, func(d tool.Definition) bool { return d.Name == call.Name }) {
			out = append(out, call)
		}
	}
	return out
}

// available lists the offered tool names for messages ("none" when no
// tool is offered).
func available(defs []tool.Definition) string {
	if len(defs) == 0 {
		return "none"
	}
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

// recoverUndefined decides what a reply with undefined calls does: with recovery
// enabled and runs left, it appends the reply and a tool message that
// answers every call (undefined ones with "not defined", the others with
// "not run"), sets recover_pending and counts the recovery; otherwise it
// returns ErrUndefinedTool naming the node and the tool.
func (h *inferenceHandler) recoverUndefined(c *Call, reply message.Message, undefined []message.ToolCall, defs []tool.Definition) error {
	names := make([]string, len(undefined))
	for i, u := range undefined {
		names[i] = fmt.Sprintf("%q", u.Name)
	}
	if !h.recovery.enabled {
		return fault.Wrap(fault.Validation, ErrUndefinedTool, opInference, "node %q: the reply calls tool %s, which the node does not offer (available: %s)",
			c.Node, strings.Join(names, ", "), available(defs))
	}
	count := boardCount(c.Board.Vars[h.recovery.countKey])
	if count >= h.recovery.max {
		return fault.Wrap(fault.Validation, ErrUndefinedTool, opInference,
			"node %q: the reply calls tool %s, which the node does not offer (available: %s), after %d of %d recoveries",
			c.Node, strings.Join(names, ", "), available(defs), count, h.recovery.max)
	}
	results := message.Message{Role: message.RoleTool}
	for _, call := range reply.ToolCalls() {
		text := fmt.Sprintf("tool %q is not defined; available: %s", call.Name, available(defs))
		if !slices.ContainsFunc(undefined, func(u message.ToolCall) bool { return u.ID == call.ID && u.Name == call.Name }) {
			text = fmt.Sprintf("tool %q was not run: the same reply called an undefined tool; call it again if needed", call.Name)
		}
		results.Parts = append(results.Parts, message.ToolResultPart(call.ID, text, true))
	}
	c.Board.Append(h.channel, reply, results)
	c.Board.Vars[h.pendingKey] = false
	c.Board.Vars[h.recovery.pendingKey] = true
	c.Board.Vars[h.recovery.countKey] = float64(count + 1)
	return nil
}

// boardCount reads a board var as a count: a number, or 0.
func boardCount(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	}
	return 0
}
