package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
)

const opBuild = "build graph"

// Defaults of Options.
const (
	DefaultScriptRuntimeName    = "js"
	DefaultMaxIterations        = 100
	DefaultRunEndPublishTimeout = 5 * time.Second
	DefaultRetryBackoff         = 500 * time.Millisecond
	// DefaultInterruptGrace is how long a node that is running when its
	// turn is interrupted may go on (to see host.checkInterrupt() and end
	// by itself) before the engine stops it.
	DefaultInterruptGrace = 100 * time.Millisecond
	DefaultMaxBranches    = 16
	// MaxNodeRetriesCap is the most max_node_retries may be.
	MaxNodeRetriesCap = 10
)

// MergeStrategy says which branch's write of a board var survives a
// parallel wave.
type MergeStrategy string

// The merge strategies.
const (
	FirstWriteWins MergeStrategy = "first_write_wins" // the first branch in wave order that wrote the var
	LastWriteWins  MergeStrategy = "last_write_wins"  // the last branch in wave order that wrote the var
)

// ParallelOptions configure parallel waves (REF 5.6).
type ParallelOptions struct {
	Enabled        bool          // run waves of two or more nodes in parallel
	BranchTimeout  time.Duration // per branch; 0 means none
	MaxConcurrency int           // branches running at once; 0 means all of them
	MaxBranches    int           // a larger wave fails with BudgetExceeded; 0 means DefaultMaxBranches
	MergeStrategy  MergeStrategy // "" means LastWriteWins
}

// Options configure Build. The zero value of each field is documented; the
// engine factory fills them from the engine settings.
type Options struct {
	// NodeTypes adds node types to the built-in "script". A name given
	// twice is a Conflict.
	NodeTypes []NodeType
	// Runtimes are the script runtimes nodes and conditions may use, by
	// name. The one named ScriptRuntimeName evaluates conditions.
	Runtimes map[string]sandbox.Runtime
	// ScriptRuntimeName is the default runtime of script nodes and the
	// runtime of conditions; "" means DefaultScriptRuntimeName.
	ScriptRuntimeName string
	// MaxIterations bounds the node runs of one run; 0 means
	// DefaultMaxIterations.
	MaxIterations int
	// Timeout bounds one run; 0 means none.
	Timeout time.Duration
	// RunEndPublishTimeout bounds the run-end publish; 0 means
	// DefaultRunEndPublishTimeout.
	RunEndPublishTimeout time.Duration
	// MaxNodeRetries is how often a failed node is retried; 0 means never,
	// at most MaxNodeRetriesCap.
	MaxNodeRetries int
	// RetryBackoff is the base of the linear backoff: retry n waits n times
	// it; 0 means DefaultRetryBackoff.
	RetryBackoff time.Duration
	// InterruptGrace is how long the nodes running when the run is
	// interrupted may go on before they are stopped: their writes are then
	// dropped, and the run ends Interrupted at its last checkpoint, so
	// that a resume runs them again. 0 means DefaultInterruptGrace.
	InterruptGrace time.Duration
	// Parallel configures parallel waves.
	Parallel ParallelOptions
	// Limits tighten the limits of every script call and condition;
	// Limits.RunTime, when set, bounds a whole run (Engine.RunTime). Zero
	// fields leave the runtime's own limits.
	Limits sandbox.Limits
	// Deps are the engine's dependencies by document key, for node types
	// (NodeInput.Deps); the factory sets them.
	Deps map[string]any
	// ResolveText resolves {file}/{embed} references in node configs (a
	// resource.Input's ResolveText); nil allows inline strings only.
	ResolveText func(ctx context.Context, raw json.RawMessage) (string, error)
	// ResolveModule loads the WebAssembly module a {file}/{embed}
	// reference names, under the loader's module cap (a resource.Input's
	// ResolveModule); nil means the bytes ResolveText gives, or refuses
	// modules given by reference when ResolveText is nil too.
	ResolveModule func(ctx context.Context, raw json.RawMessage) ([]byte, error)
	// Logger receives what the engine only logs (a failed checkpoint or
	// event publish); nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults checks o and fills its zero fields.
func (o Options) withDefaults() (Options, error) {
	bad := func(format string, args ...any) (Options, error) {
		return o, fault.New(fault.Validation, opBuild, "options: "+format, args...)
	}
	switch {
	case o.MaxIterations < 0:
		return bad("max_iterations must be > 0, got %d", o.MaxIterations)
	case o.Timeout < 0:
		return bad("timeout must be >= 0, got %s", o.Timeout)
	case o.RunEndPublishTimeout < 0:
		return bad("run_end_publish_timeout must be > 0, got %s", o.RunEndPublishTimeout)
	case o.MaxNodeRetries < 0 || o.MaxNodeRetries > MaxNodeRetriesCap:
		return bad("max_node_retries must be between 0 and %d, got %d", MaxNodeRetriesCap, o.MaxNodeRetries)
	case o.RetryBackoff < 0:
		return bad("retry backoff must be >= 0, got %s", o.RetryBackoff)
	case o.InterruptGrace < 0:
		return bad("interrupt_grace must be > 0, got %s", o.InterruptGrace)
	case o.Parallel.BranchTimeout < 0 || o.Parallel.MaxConcurrency < 0 || o.Parallel.MaxBranches < 0:
		return bad("parallel: branch_timeout, max_concurrency and max_branches must be >= 0")
	}
	switch o.Parallel.MergeStrategy {
	case "":
		o.Parallel.MergeStrategy = LastWriteWins
	case FirstWriteWins, LastWriteWins:
	default:
		return bad("parallel: merge_strategy %q is not %s or %s", o.Parallel.MergeStrategy, FirstWriteWins, LastWriteWins)
	}
	if err := o.Limits.Validate(); err != nil {
		return o, fault.Wrap(fault.Validation, err, opBuild, "options: limits")
	}
	for name, rt := range o.Runtimes {
		if agent.IsNil(rt) {
			return bad("script runtime %q is nil", name)
		}
	}
	o.ScriptRuntimeName = orDefault(o.ScriptRuntimeName, DefaultScriptRuntimeName)
	o.MaxIterations = orDefault(o.MaxIterations, DefaultMaxIterations)
	o.RunEndPublishTimeout = orDefault(o.RunEndPublishTimeout, DefaultRunEndPublishTimeout)
	o.RetryBackoff = orDefault(o.RetryBackoff, DefaultRetryBackoff)
	o.InterruptGrace = orDefault(o.InterruptGrace, DefaultInterruptGrace)
	o.Parallel.MaxBranches = orDefault(o.Parallel.MaxBranches, DefaultMaxBranches)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch text := o.ResolveText; {
	case o.ResolveModule != nil:
	case text != nil:
		o.ResolveModule = func(ctx context.Context, raw json.RawMessage) ([]byte, error) {
			s, err := text(ctx, raw)
			return []byte(s), err
		}
	default:
		o.ResolveModule = noModules
	}
	if o.ResolveText == nil {
		o.ResolveText = inlineText
	}
	return o, nil
}

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// inlineText is the ResolveText of an engine built without a loader.
func inlineText(ctx context.Context, raw json.RawMessage) (string, error) {
	if src, ok := resource.SourceOf(raw); ok {
		return "", fault.New(fault.NotAvailable, "resolve "+src.String(), "no loader: the engine was built without one")
	}
	return resource.Input{}.ResolveText(ctx, raw)
}

// noModules is the ResolveModule of an engine built without a loader.
func noModules(_ context.Context, raw json.RawMessage) ([]byte, error) {
	if src, ok := resource.SourceOf(raw); ok {
		return nil, fault.New(fault.NotAvailable, "resolve "+src.String(), "no loader: the engine was built without one")
	}
	return nil, fault.New(fault.Validation, "resolve module", "want {file: path} or {embed: name}")
}

// Engine is a built graph: an agent.Engine that runs the document, and an
// agent.Resumer. It is immutable and safe for concurrent use; each Execute
// has its own state.
type Engine struct {
	doc   *Document
	opts  Options
	nodes map[string]*builtNode
	out   map[string][]*builtEdge // outgoing edges by node, in document order
	// scopers are the bound runtimes that keep state per run, in name
	// order.
	scopers []sandbox.RunScoper
	actors  actorCache
	// hostNames are the host ABI's function names (hostabi.Names),
	// read-only: every step's ABI lists them.
	hostNames []string
	// cpAttrs are the attributes of every checkpoint, read-only.
	cpAttrs map[string]string
	// entryWave is the first wave of a run from the entry, read-only.
	entryWave []string
	// runPayload is the payload of run start and of a run end without an
	// error, encoded once.
	runPayload json.RawMessage
	// runTime bounds every run (RunTime); 0: no bound. It is computed at
	// its first use: Build asks the runtimes nothing.
	runTime func() time.Duration
}

var (
	_ agent.Engine  = (*Engine)(nil)
	_ agent.Resumer = (*Engine)(nil)
)

// builtNode is a node ready to run.
type builtNode struct {
	index   int
	id, typ string
	handler Handler
	config  map[string]any  // the decoded config, references unresolved
	literal map[string]bool // top-level keys not resolved
	// static is set when no resolved key holds a ${ reference: every step
	// then shares config as it is.
	static bool
	skip   *condition
	roles  *NodeRoles // static read/write roles; nil: unrestricted
	// plain and skipped are the node's step event payloads without an
	// error, encoded once.
	plain, skipped json.RawMessage
	// sizes is set when handler is one of the engine's script handlers,
	// whose Run ends with its runtime's call: the board's size the runtime
	// reports (Call.boardAfter) is then the board's after the step.
	sizes bool
	// shallow is set when handler is one of the engine's handlers that
	// write the board themselves, each var as a whole value and channels
	// by appending only: what they changed is found by comparing the
	// board's vars and channel lengths before and after (boardChanges).
	shallow bool
}

// builtEdge is an edge with its compiled condition (nil: always).
type builtEdge struct {
	index int
	to    string
	only  []string // {to}, read-only: the frontier when it is the only successor
	cond  *condition
}

// Build validates doc and turns it into an Engine (REF 5.1.5): every
// node's type must be known and its config a JSON object the type accepts,
// and every condition and skip condition must compile in the runtime named
// ScriptRuntimeName. Problems are joined, each a *DocumentError naming the
// node or edge. The engine keeps a copy of doc.
func Build(ctx context.Context, doc *Document, opts Options) (*Engine, error) {
	if err := doc.Validate(); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	types, err := newNodeTypes(opts.NodeTypes)
	if err != nil {
		return nil, err
	}
	e := &Engine{doc: cloneDocument(doc), opts: opts, nodes: map[string]*builtNode{}, out: map[string][]*builtEdge{},
		hostNames: hostabi.Names(), cpAttrs: map[string]string{"graph": doc.Name}, entryWave: []string{doc.Entry},
		runTime: sync.OnceValue(func() time.Duration { return runTimeOf(opts) })}
	if e.runPayload, err = json.Marshal(event.RunPayload{Graph: doc.Name}); err != nil {
		return nil, fault.Wrap(fault.Internal, err, opBuild, "encode the run payload")
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Runtimes)) {
		if s, ok := opts.Runtimes[name].(sandbox.RunScoper); ok {
			e.scopers = append(e.scopers, s)
		}
	}
	var errs []error
	for i, n := range e.doc.Nodes {
		bn, err := e.buildNode(ctx, i, n, types)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e.nodes[n.ID] = bn
	}
	for i, edge := range e.doc.Edges {
		be := &builtEdge{index: i, to: edge.To, only: []string{edge.To}}
		if strings.TrimSpace(edge.Condition) != "" {
			owner := edge.From + " -> " + edge.To
			if be.cond, err = e.newCondition(ctx, edge.Condition, edgeField(i, "condition"), "edge "+owner, owner); err != nil {
				errs = append(errs, err)
			}
		}
		e.out[edge.From] = append(e.out[edge.From], be)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return e, nil
}

// buildNode builds node i.
func (e *Engine) buildNode(ctx context.Context, i int, n Node, types nodeTypes) (*builtNode, error) {
	t, ok := types[n.Type]
	if !ok {
		return nil, docErr(opBuild, nodeField(i, "type"), "node %q: unknown node type %q (known: %s)", n.ID, n.Type, strings.Join(types.names(), ", "))
	}
	if isAbsent(n.Config) {
		n.Config = json.RawMessage("{}")
	}
	cfg, err := decodeObject(n.Config)
	if err != nil {
		return nil, docErr(opBuild, nodeField(i, "config"), "node %q: want an object, got %s", n.ID, jsonKind(n.Config))
	}
	h, err := t.Build(ctx, NodeInput{Node: n, Runtimes: e.opts.Runtimes, ScriptRuntimeName: e.opts.ScriptRuntimeName,
		ResolveText: e.opts.ResolveText, ResolveModule: e.opts.ResolveModule, Deps: e.opts.Deps})
	if err != nil {
		return nil, &DocumentError{Op: opBuild, Path: nodeField(i, "config"), Msg: fmt.Sprintf("node %q (%s)", n.ID, n.Type),
			Kind: fault.KindOr(err, fault.Validation), Err: err}
	}
	if agent.IsNil(h) {
		return nil, &DocumentError{Op: opBuild, Path: nodeField(i, ""), Kind: fault.Internal,
			Msg: fmt.Sprintf("node %q: node type %q built no handler", n.ID, n.Type)}
	}
	bn := &builtNode{index: i, id: n.ID, typ: n.Type, handler: h, config: cfg, literal: map[string]bool{}}
	switch h.(type) {
	case *scriptHandler, *customHandler:
		bn.sizes = true
	case *inferenceHandler, *toolHandler, *delegateHandler:
		bn.shallow = true
	}
	if raw, err := json.Marshal(event.StepPayload{NodeID: n.ID, Graph: e.doc.Name}); err == nil {
		bn.plain = raw
	}
	if raw, err := json.Marshal(event.StepPayload{NodeID: n.ID, Graph: e.doc.Name, Skipped: true}); err == nil {
		bn.skipped = raw
	}
	if l, ok := h.(LiteralConfig); ok {
		for _, k := range l.LiteralKeys() {
			bn.literal[k] = true
		}
	}
	bn.static = !hasRefs(cfg, bn.literal)
	if rh, ok := h.(RoleHandler); ok {
		roles := rh.Roles()
		bn.roles = &roles
	}
	if strings.TrimSpace(n.SkipCondition) != "" {
		bn.skip, err = e.newCondition(ctx, n.SkipCondition, nodeField(i, "skip_condition"), fmt.Sprintf("node %q", n.ID), n.ID)
		if err != nil {
			return nil, err
		}
	}
	return bn, nil
}

func (e *Engine) newCondition(ctx context.Context, expr, path, where, owner string) (*condition, error) {
	name := e.opts.ScriptRuntimeName
	return newCondition(ctx, expr, path, where, owner, e.opts.Runtimes[name], name, e.opts.Limits)
}

// decodeObject decodes a JSON object, keeping numbers as json.Number.
func decodeObject(raw json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fault.New(fault.Validation, opBuild, "want an object")
	}
	return m, nil
}

// Document returns a copy of the engine's document.
func (e *Engine) Document() *Document { return cloneDocument(e.doc) }

func cloneDocument(d *Document) *Document {
	out := *d
	out.Nodes = slices.Clone(d.Nodes)
	for i := range out.Nodes {
		out.Nodes[i].Config = slices.Clone(d.Nodes[i].Config)
	}
	out.Edges = slices.Clone(d.Edges)
	return &out
}

// Options returns the options the engine was built with, defaults filled
// in. The Runtimes map and the NodeTypes slice are copies.
func (e *Engine) Options() Options {
	o := e.opts
	o.Runtimes = maps.Clone(e.opts.Runtimes)
	o.NodeTypes = slices.Clone(e.opts.NodeTypes)
	o.Deps = maps.Clone(e.opts.Deps)
	return o
}

// builtinNodeTypes are the node types every engine knows, one per line.
func builtinNodeTypes() []NodeType {
	return []NodeType{
		ScriptType(),
		InferenceType(),
		ToolType(),
		DelegateType(),
	}
}

// isBuiltinNodeType reports whether name is a built-in node type.
func isBuiltinNodeType(name string) bool {
	for _, t := range builtinNodeTypes() {
		if t.Name() == name {
			return true
		}
	}
	return false
}
