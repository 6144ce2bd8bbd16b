package sandbox

import (
	"context"
	"encoding/json"
	"reflect"

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
	// Invoke runs one script invocation to its end. A script that ends
	// normally (or signals done) returns nil. Its error kinds: Interrupted
	// (signal.interrupt, an *agent.InterruptedError), the class of
	// signal.error, BudgetExceeded or Timeout for a limit (a *LimitError),
	// Validation for a script that does not compile, Aborted when ctx is
	// cancelled. Every error names inv.Node.
	Invoke(ctx context.Context, inv Invocation) error
	// Eval evaluates an expression over vars and returns a JSON-compatible
	// value (graph conditions). A runtime that cannot evaluate expressions
	// returns a NotAvailable error.
	Eval(ctx context.Context, ev Evaluation) (any, error)
}

// Script is the code of one node: JavaScript source, or a WebAssembly
// module and the export to call.
type Script struct {
	Name   string // shown in stack traces and errors, for example the node id
	Source string // JavaScript source
	Module []byte // WebAssembly module
	Entry  string // exported function of Module
}

// Invocation is one call of a node script.
type Invocation struct {
	Node   string // node id; every error names it
	Type   string // node type, for node.type()
	Script Script // what to run
	// Config is the node's config, JSON-compatible, after ${board}
	// resolution; nil when the node has none. It is read-only: the graph
	// engine shares one map between the steps of a node whose config holds
	// no reference.
	Config map[string]any
	// StaticConfig tells that Config is one map the caller hands, unchanged,
	// to every call of the node (the graph engine's config without ${board}
	// references): a runner may keep what it made of it, by the map's
	// identity, rather than convert it at each call.
	StaticConfig bool
	Board        *agent.Board // the run's board: the script reads and writes it
	ABI          ABI          // the capability-checked host functions
	Run          RunInfo      // what run.* answers
	Limits       Limits       // the limits of this call (already merged and tightened)
	// Parallel cancels a sibling branch of the current parallel wave
	// (parallel.cancelNode); nil outside a parallel wave.
	Parallel func(nodeID, reason string) bool
	// BoardBytes is Board's size as BoardJSONBytes measures it, when the
	// caller knows it (the graph engine measured it after the last wave),
	// or 0: a runner that counts board writes against max_board_bytes
	// starts from it rather than measuring the board again.
	BoardBytes int64
	// BoardBytesAfter, when not nil, is where a runner that kept Board's
	// size through the call's writes (BoardMeter) stores it when the call
	// returns nil: exactly what BoardJSONBytes would measure then, or 0
	// when the runner does not know it. The graph engine passes it to a
	// runtime that declares exact reports (ExactBoardBytes) for its script
	// nodes, and then need not measure the board after their waves.
	BoardBytesAfter *int64
}

// ExactBoardBytes, embedded in a Runtime and set with
// DeclareExactBoardBytes, declares that the runtime's Invoke reports the
// board's size exactly (Invocation.BoardBytesAfter): that the board
// changes during a call only through the runtime's own writes and that it
// counts each of them (BoardMeter). The graph engine hands the pointer
// only to such a runtime, and takes its report as the board's size.
//
// The declaration names the runtime it was made for, so that a type
// wrapping a runtime does not inherit it, whether it embeds the Runtime
// interface or the runtime's own type: a wrapper that retries a call, or
// writes the board itself, would make the report wrong, and is measured.
type ExactBoardBytes struct{ rt Runtime }

// DeclareExactBoardBytes returns the declaration of rt, for the
// ExactBoardBytes field rt embeds.
func DeclareExactBoardBytes(rt Runtime) ExactBoardBytes { return ExactBoardBytes{rt: rt} }

func (d ExactBoardBytes) exactBoardBytesOf() Runtime { return d.rt }

// ReportsExactBoardBytes reports whether rt declares exact board sizes:
// rt is a non-nil pointer that embeds an ExactBoardBytes made for rt
// itself. It never panics: not for a nil pointer, nor for one reached
// through a nil pointer rt embeds.
func ReportsExactBoardBytes(rt Runtime) (ok bool) {
	v := reflect.ValueOf(rt)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	d, is := rt.(interface{ exactBoardBytesOf() Runtime })
	if !is {
		return false
	}
	defer func() {
		if recover() != nil { // the declaration sits behind a nil pointer
			ok = false
		}
	}()
	of := reflect.ValueOf(d.exactBoardBytesOf())
	return of.IsValid() && of.Type() == v.Type() && of.Pointer() == v.Pointer()
}

// Evaluation is one expression evaluation (a graph condition).
type Evaluation struct {
	Node   string         // the node or edge the expression belongs to, named in errors
	Expr   string         // a JavaScript expression
	Vars   map[string]any // the variables the expression sees, JSON-compatible
	Limits Limits
}

// RunInfo identifies the run a script belongs to.
type RunInfo struct {
	RunID       string `json:"run_id"`
	TaskID      string `json:"task_id"`
	AgentID     string `json:"agent_id"`
	ContextID   string `json:"context_id"`
	ParentRunID string `json:"parent_run_id"`
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
