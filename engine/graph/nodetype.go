package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
)

// NodeType is a kind of node: what a document names in nodes[].type. The
// engine knows "script" (ScriptType); Options.NodeTypes adds more. A node
// type is a value, safe for concurrent use.
type NodeType interface {
	// Name is the type's name in documents.
	Name() string
	// Build checks one node of this type and returns its handler. It runs
	// once per node, in Build. It decodes the config strictly (DecodeConfig)
	// so that an unknown key fails the build, and resolves what it can
	// ahead of time (script sources, runtimes). Errors should be
	// Validation; Build names the node in front of them.
	Build(ctx context.Context, in NodeInput) (Handler, error)
}

// NodeInput is what NodeType.Build receives.
type NodeInput struct {
	Node Node // as the document wrote it; Config is a JSON object ("{}" when absent)
	// Runtimes are the bound script runtimes by name.
	Runtimes map[string]sandbox.Runtime
	// ScriptRuntimeName is the default runtime name (Options.ScriptRuntimeName).
	ScriptRuntimeName string
	// ResolveText turns a config value that is a string or a {file}/{embed}
	// reference into text. It is never nil.
	ResolveText func(ctx context.Context, raw json.RawMessage) (string, error)
	// ResolveModule loads the WebAssembly module a {file}/{embed}
	// reference names, under the loader's module cap. It is never nil.
	ResolveModule func(ctx context.Context, raw json.RawMessage) ([]byte, error)
	// Deps are the engine's dependencies by document key (Options.Deps);
	// node types that need a model provider or a tool assembly find it here.
	Deps map[string]any
}

// Handler runs the nodes of one document node. Run is called once per
// attempt (retries call it again on a rolled-back board), possibly from
// several goroutines at once for nodes of different runs.
type Handler interface {
	Run(ctx context.Context, call *Call) error
}

// LiteralConfig is implemented by handlers whose config holds keys the
// engine must not resolve ${board...} references in (a script's source,
// for instance, is code). LiteralKeys lists those top-level keys.
type LiteralConfig interface {
	LiteralKeys() []string
}

// Call is one invocation of a node. A Call and the ABI it returns are
// valid until the handler's Run returns: the engine reuses them for the
// run's next step.
type Call struct {
	Node string // node id
	Type string // node type
	// Config is the node's config after ${board} resolution. It is
	// read-only: a config without references is one map that every step
	// of the node shares.
	Config map[string]any
	Board  *agent.Board // the board the node reads and writes
	// Host is the run's host. Deltas a node publishes itself inside a
	// parallel branch must be marked speculative by the node; host ABI
	// calls through ABI are marked for it.
	Host    agent.Host
	Run     agent.Run
	RunInfo sandbox.RunInfo
	// Limits are the engine's limits for this call (zero fields: the
	// runtime's own). A handler may tighten them before it calls ABI: the
	// dispatcher enforces the limits the Call has then.
	Limits   sandbox.Limits
	Parallel func(nodeID, reason string) bool
	// ForkID and BranchID are set inside a parallel branch.
	ForkID, BranchID string

	step *stepABI  // the step's host ABI; nil outside a step
	rs   *runState // the run the step belongs to
	// boardBytes is Board's size at the step's start when the engine
	// knows it, else 0 (BoardBytes).
	boardBytes int64
	// boardAfter is Board's size once Run returned nil, when the engine
	// measured it exactly as it applied a script call's writes
	// (invokeScript), else 0. Only the engine's script handlers set it,
	// and the engine reads it only when such a handler is the node's own
	// (builtNode.sizes): a handler that wraps one may write the board
	// after it.
	boardAfter int64
	// static is set when Config is the node's own map (ConfigStatic).
	static bool
}

// ConfigStatic reports whether Config is the node's config as built, the
// same map at every step of the node (a config without ${board}
// references): a handler that invokes a sandbox.Runtime passes such a
// config with the script (sandbox.Script.Config) rather than with the call,
// so that the runtime may keep what it made of it instead of converting it
// at each step.
func (c *Call) ConfigStatic() bool { return c.static }

// BoardBytes returns the board's size as sandbox.BoardJSONBytes measures
// it, when the engine knows it, or 0: a handler that invokes a
// sandbox.Runtime passes it on (sandbox.Invocation.BoardBytes). It holds
// until the handler changes the board.
func (c *Call) BoardBytes() int64 { return c.boardBytes }

// ABI returns a capability-checked host ABI for this call: a
// hostabi.Dispatcher (made on its first use) with the run's grants,
// journal and interrupt latch and the Call's Limits. Call it once per
// invocation.
func (c *Call) ABI() sandbox.ABI {
	if c.step == nil {
		return nil
	}
	return c.rs.abi(c)
}

// DecodeConfig decodes a node's config strictly into out: unknown keys,
// values of the wrong type and trailing data are Validation errors that
// hold a *resource.FieldError naming the value's path in the config
// (resource.DecodeStrict). Empty config decodes as {}.
func DecodeConfig(raw json.RawMessage, out any) error {
	if err := resource.DecodeStrict(raw, out); err != nil {
		return fault.Wrap(fault.KindOr(err, fault.Validation), err, "decode config", "")
	}
	return nil
}

// nodeTypes indexes the node types an engine knows.
type nodeTypes map[string]NodeType

// newNodeTypes returns the built-in types plus extra. A nil entry, an empty
// name or a name given twice (or the name of a built-in) is an error.
func newNodeTypes(extra []NodeType) (nodeTypes, error) {
	out := nodeTypes{}
	builtin := builtinNodeTypes()
	where := map[string]string{}
	for _, t := range builtin {
		where[t.Name()] = "the built-in node type"
	}
	for i, t := range append(builtin, extra...) {
		if agent.IsNil(t) {
			return nil, fault.New(fault.Validation, opBuild, "node types: a node type is nil")
		}
		name := t.Name()
		if name == "" {
			return nil, fault.New(fault.Validation, opBuild, "node types: a node type has no name")
		}
		if i >= len(builtin) {
			at := fmt.Sprintf("node_types[%d]", i-len(builtin))
			if other, dup := where[name]; dup {
				return nil, fault.New(fault.Conflict, opBuild, "node types: %s %q clashes with %s %q", at, name, other, name)
			}
			where[name] = at
		}
		out[name] = t
	}
	return out, nil
}

// names lists the type names, sorted.
func (ts nodeTypes) names() []string {
	out := make([]string, 0, len(ts))
	for n := range ts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
