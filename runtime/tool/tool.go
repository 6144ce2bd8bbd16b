package tool

import (
	"context"
	"encoding/json"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/limit"
	"github.com/corral-rt/corral/runtime/message"
)

// Kind is the resource kind of tool assemblies.
const Kind = "tool.Assembly"

// Definition describes one tool to a model: its name, what it does, and
// the JSON schema of its arguments (an object schema).
type Definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Batch is one batch of tool calls, as a model asked for them.
type Batch struct {
	// Host is the run's host: tool implementations reach the world only
	// through the capabilities it yields and the agent's grants.
	Host agent.Host
	// Run is the run the batch belongs to (its Capabilities are the
	// agent's grants).
	Run agent.Run
	// Node is the graph node that runs the batch, named in errors.
	Node string
	// Calls are the model's calls, in the model's order, with its ids.
	Calls []message.ToolCall
	// ABI is the capability-checked host ABI the batch's calls use (the
	// graph engine passes the node step's, which journals the run's
	// non-deterministic calls and shares its interrupt latch). Nil: an
	// assembly that runs sandboxed code makes a dispatcher of its own from
	// Host, Run and Limits.
	ABI ABI
	// Limits are the caller's limits for each call; an assembly may only
	// tighten them. Zero fields: the assembly's own.
	Limits limit.Limits
}

// ABI is the host ABI as a batch's sandboxed calls reach it: the names of
// the host functions to bind, and a call that checks capabilities and
// limits. It has the methods of sandbox.ABI, so that a value of either
// type is one of the other; package hostabi implements both.
type ABI interface {
	// Functions lists the catalog's function names, sorted.
	Functions() []string
	// Call runs the host function name with JSON arguments (an array, or
	// empty for none). Errors carry a fault kind.
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// Assembly is a set of tools an agent may call. It is safe for concurrent
// use.
type Assembly interface {
	// Definitions lists the tools, sorted by name.
	Definitions() []Definition
	// Execute runs every call of the batch and returns one result per
	// call, in the order of the calls, each carrying its call's id. A tool
	// that fails, or a call of a tool the assembly does not have, is a
	// result with IsError set, not an error: the error return is for the
	// batch as a whole (ctx cancelled, a limit of the run).
	Execute(ctx context.Context, b Batch) ([]message.ToolResult, error)
}
