package sandbox

import (
	"context"
	"encoding/json"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
)

// Kind is the resource kind of script runtimes.
const Kind = "sandbox.Runtime"

// Runtime runs untrusted node scripts. Implementations (sandbox/js,
// sandbox/wasm) must pass sandbox/sandboxtest. A Runtime is safe for
// concurrent use; every Invoke is isolated from every other one.
type Runtime interface {
	// Name is the implementation's name: "js" or "wasm".
	Name() string
	// Invoke runs one script invocation to its end and returns what the
	// call did to the board. A script that ends normally (or signals done)
	// returns a nil error. Its error kinds: Interrupted (signal.interrupt,
	// an *agent.InterruptedError), the class of signal.error,
	// BudgetExceeded or Timeout for a limit (a *LimitError), Validation for
	// a script that does not compile, Aborted when ctx is cancelled. Every
	// error names inv.Node. The Outcome is valid with an error too: it
	// holds the writes the script made before it failed.
	//
	// Invoke never writes inv.Board, nor keeps it or its values after it
	// returns: a runner may live in another process.
	Invoke(ctx context.Context, inv Invocation) (Outcome, error)
	// Eval evaluates an expression over vars and returns a JSON-compatible
	// value (graph conditions). A runtime that cannot evaluate expressions
	// returns a NotAvailable error.
	Eval(ctx context.Context, ev Evaluation) (any, error)
}

// Script is the code of one node: JavaScript source, or a WebAssembly
// module and the export to call, and the node's config when it is the
// same at every call.
type Script struct {
	Name   string // shown in stack traces and errors, for example the node id
	Source string // JavaScript source
	Module []byte // WebAssembly module
	Entry  string // exported function of Module
	// Config is the config of a node whose config does not change from
	// call to call (JSON-compatible, read-only): one map the caller hands
	// with the script at every call, so that a runner may keep what it
	// made of it with what it made of the script. Invocation.Config, when
	// not nil, is the call's config instead.
	Config map[string]any
}

// Invocation is one call of a node script. Every field is a plain value
// or a function the runner calls back; nothing in it points into the
// caller's state, so that a runner in another process can be handed it.
type Invocation struct {
	Node   string // node id; every error names it
	Type   string // node type, for node.type()
	Script Script // what to run
	// Config is the call's config, JSON-compatible and read-only, after
	// ${board} resolution; nil: Script.Config (nil too when the node has
	// none).
	Config map[string]any
	// Board is the run's board as the call finds it. The runner reads it
	// and never writes it (BoardView keeps a call's writes over it); the
	// writes come back in Outcome.Writes.
	Board agent.Board
	// BoardBytes is Board's size as BoardJSONBytes measures it, when the
	// caller knows it, or 0: a runner counts the call's writes against
	// max_board_bytes from it rather than measuring the board again.
	BoardBytes int64
	ABI        ABI     // the capability-checked host functions
	Run        RunInfo // what run.* answers
	Limits     Limits  // the limits of this call (already merged and tightened)
	// Parallel cancels a sibling branch of the current parallel wave
	// (parallel.cancelNode); nil outside a parallel wave.
	Parallel func(nodeID, reason string) bool
}

// Outcome is what a call did, as plain values.
type Outcome struct {
	// Writes are the script's board writes, in the order it made them, up
	// to its end or its failure. Applied to Invocation.Board they give the
	// board the script left; the caller measures the board's new size as
	// it applies them (Writes.ApplyMeasured) and trusts nothing else.
	Writes Writes
	// CPU is the CPU time the call took, when the runner can tell it (a
	// worker process's rusage), or 0: the caller then charges the call's
	// duration, an upper bound.
	CPU time.Duration
}

// CallConfig returns the config of inv's call: Config, else Script.Config.
func (inv *Invocation) CallConfig() map[string]any {
	if inv.Config != nil {
		return inv.Config
	}
	return inv.Script.Config
}

// Evaluation is one expression evaluation (a graph condition).
type Evaluation struct {
	Node   string         // the node or edge the expression belongs to, named in errors
	Expr   string         // a JavaScript expression
	Vars   map[string]any // the variables the expression sees, JSON-compatible
	Limits Limits
	// Tenant is the tenant of the run the expression belongs to ("" when
	// none, as when a document is checked): a runner never evaluates it in
	// a VM or a worker that serves another tenant.
	Tenant string
}

// RunInfo identifies the run a script belongs to.
type RunInfo struct {
	RunID       string `json:"run_id"`
	TaskID      string `json:"task_id"`
	AgentID     string `json:"agent_id"`
	ContextID   string `json:"context_id"`
	ParentRunID string `json:"parent_run_id"`
	// Tenant is the tenant the run's agent belongs to: a runner never runs
	// the call in a VM or a worker that serves another tenant.
	Tenant string `json:"tenant,omitempty"`
}

// ABI is the host side of the host ABI as a runner sees it: the names it
// should bind, and a call that checks capabilities and limits, validates the
// arguments and returns the JSON result. package hostabi implements it; a
// runner never checks capabilities itself.
type ABI interface {
	// Functions lists the catalog's function names, sorted. Every name is
	// bound, granted or not: a refused call fails with PolicyDenied.
	Functions() []string
	// Call runs the host function name with JSON arguments (an array, or
	// empty for none). Errors carry a fault kind.
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}
