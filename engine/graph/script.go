package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
)

// ScriptTypeName is the name of the built-in script node type.
const ScriptTypeName = "script"

// ScriptConfig is the config of a script node (REF 5.3.3). Exactly
// one of Source (JavaScript) and Module (WebAssembly, with Entry) is set.
type ScriptConfig struct {
	// Runtime names the bound script runtime that runs the script; empty
	// means the engine's script_runtime_name.
	Runtime string `json:"runtime,omitempty"`
	// Source is the script: a string, or {file}/{embed}.
	Source json.RawMessage `json:"source,omitempty"`
	// Module is a WebAssembly module given as {file}/{embed}, and Entry
	// the export to call.
	Module json.RawMessage `json:"module,omitempty"`
	Entry  string          `json:"entry,omitempty"`
	// Name is shown in stack traces and errors; empty means the node id.
	Name string `json:"name,omitempty"`
	// Config is what the script sees as its config global, after
	// ${board} resolution; it must be an object.
	Config json.RawMessage `json:"config,omitempty"`
}

// ScriptType returns the script node type: each call runs the node's
// script in a fresh environment of the named sandbox.Runtime, with the
// board, the resolved config, and the host ABI through a
// hostabi.Dispatcher made for that call.
func ScriptType() NodeType { return scriptType{} }

type scriptType struct{}

func (scriptType) Name() string { return ScriptTypeName }

func (scriptType) Build(ctx context.Context, in NodeInput) (Handler, error) {
	var c ScriptConfig
	if err := DecodeConfig(in.Node.Config, &c); err != nil {
		return nil, err
	}
	name := c.Runtime
	if name == "" {
		name = in.ScriptRuntimeName
	}
	rt, ok := in.Runtimes[name]
	if !ok {
		return nil, fault.New(fault.Validation, "", "runtime: script runtime %q is not bound (bound: %s)", name, boundNames(in.Runtimes))
	}
	script, err := loadScript(ctx, in, c)
	if err != nil {
		return nil, err
	}
	if err := runtimeRuns(rt, name, script); err != nil {
		return nil, err
	}
	if err := sandbox.CheckScript(ctx, rt, script, sandbox.Limits{}); err != nil {
		return nil, compileError(c, err)
	}
	if !isAbsent(c.Config) && !strings.HasPrefix(strings.TrimSpace(string(c.Config)), "{") {
		return nil, fault.New(fault.Validation, "", "config: want an object, got %s", jsonKind(c.Config))
	}
	return &scriptHandler{rt: rt, script: script}, nil
}

// loadScript resolves the source or the module of c.
func loadScript(ctx context.Context, in NodeInput, c ScriptConfig) (sandbox.Script, error) {
	s := sandbox.Script{Name: c.Name, Entry: c.Entry}
	if s.Name == "" {
		s.Name = in.Node.ID
	}
	switch src, mod := !isAbsent(c.Source), !isAbsent(c.Module); {
	case src == mod:
		return s, fault.New(fault.Validation, "", "source: exactly one of source and module is required")
	case src:
		text, err := in.ResolveText(ctx, c.Source)
		if err != nil {
			return s, fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "source")
		}
		if strings.TrimSpace(text) == "" {
			return s, fault.New(fault.Validation, "", "source: the script is empty")
		}
		if c.Entry != "" {
			return s, fault.New(fault.Validation, "", "entry: only a module has an entry")
		}
		s.Source = text
	default:
		bin, err := in.ResolveModule(ctx, c.Module)
		if err != nil {
			return s, fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "module")
		}
		if c.Entry == "" {
			return s, fault.New(fault.Validation, "", "entry: a module needs the export to call")
		}
		s.Module = bin
	}
	return s, nil
}

// compileError places a script that does not compile: in the source's
// own file at the compiler's line when the source is a {file} reference,
// at the source or module key otherwise.
func compileError(c ScriptConfig, err error) error {
	field, raw := "source", c.Source
	if !isAbsent(c.Module) {
		field, raw = "module", c.Module
	}
	var ce *sandbox.CompileError
	if !errors.As(err, &ce) {
		return fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "%s", field)
	}
	if src, ok := resource.SourceOf(raw); ok && src.File != "" {
		return &resource.FieldError{File: src.File, Line: ce.Line, Msg: ce.Error(), Kind: fault.KindOr(err, fault.Validation)}
	}
	return &resource.FieldError{Path: field, Within: ce.Line, Msg: ce.Error(), Kind: fault.KindOr(err, fault.Validation)}
}

// runtimeRuns refuses a module on the JavaScript runtime and source on
// the WebAssembly runtime at build time, rather than at the first call.
func runtimeRuns(rt sandbox.Runtime, name string, s sandbox.Script) error {
	switch {
	case rt.Name() == "js" && len(s.Module) > 0:
		return fault.New(fault.Validation, "", "module: runtime %q runs JavaScript source; a module needs a wasm runtime", name)
	case rt.Name() == "wasm" && s.Source != "":
		return fault.New(fault.Validation, "", "source: runtime %q runs WebAssembly modules; JavaScript needs a js runtime", name)
	}
	return nil
}

func boundNames(rts map[string]sandbox.Runtime) string {
	if len(rts) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(rts)), ", ")
}

// LimitedRuntime is a sandbox.Runtime that tells its own limits. A script
// node's host ABI then enforces the runtime's limits tightened by the
// engine's, as the script does.
type LimitedRuntime interface {
	sandbox.Runtime
	Limits() sandbox.Limits
}

// ConfiguredRuntime is a LimitedRuntime that also tells the limits its
// settings set, apart from the defaults it filled in: zero fields were
// not set. A run's run_time comes from set limits (Engine.RunTime), so
// that the default of one runtime does not override what the document
// sets for another.
type ConfiguredRuntime interface {
	LimitedRuntime
	ConfiguredLimits() sandbox.Limits
}

// scriptHandler runs one script node.
type scriptHandler struct {
	rt     sandbox.Runtime
	script sandbox.Script
	limits runtimeLimits
}

// runtimeLimits tightens a call's limits by a runtime's own (a
// LimitedRuntime's), keeping the last result: a node's calls come with
// the same engine limits, and a runtime's limits do not change.
type runtimeLimits struct {
	last atomic.Pointer[[2]sandbox.Limits] // the engine's limits and the tightened ones
}

// tighten returns in tightened by rt's limits, or in when rt has none.
func (r *runtimeLimits) tighten(rt sandbox.Runtime, in sandbox.Limits) sandbox.Limits {
	l, ok := rt.(LimitedRuntime)
	if !ok {
		return in
	}
	if p := r.last.Load(); p != nil && p[0] == in {
		return p[1]
	}
	out := l.Limits().Tighten(in)
	r.last.Store(&[2]sandbox.Limits{in, out})
	return out
}

var (
	_ Handler       = (*scriptHandler)(nil)
	_ LiteralConfig = (*scriptHandler)(nil)
)

// LiteralKeys keeps the code and the runtime name out of ${board}
// resolution: only config is resolved.
func (h *scriptHandler) LiteralKeys() []string {
	return []string{"runtime", "source", "module", "entry", "name"}
}

// Run invokes the script once.
func (h *scriptHandler) Run(ctx context.Context, c *Call) error {
	var cfg map[string]any // nil: the script sees no config global, as with {}
	switch v := c.Config["config"].(type) {
	case nil:
	case map[string]any:
		cfg = v
	default:
		return fault.New(fault.Validation, "run script", "node %q: config resolved to %T, want an object", c.Node, v)
	}
	c.Limits = h.limits.tighten(h.rt, c.Limits)
	return c.invokeScript(ctx, h.rt, h.script, cfg, c.static)
}

// meter is the run host's agent.Meter, nil when it has none.
func (c *Call) meter() agent.Meter {
	if c.rs == nil {
		return nil
	}
	return c.rs.meter
}

// invokeScript runs script on rt as c's node, with cfg as its config (in
// the script when static, the same map at every call: the runtime may
// keep what it made of it), and makes the call's board writes on c.Board.
// The engine measures the board as it applies them, from the size it
// knew, so that it need not measure the board after the wave: nothing the
// runtime reports is taken on trust. The call's CPU time (Outcome.CPU, as
// a worker process measures it) or else its duration is added to the
// run's script time (the run end's cpu_ms header) and charged to the
// host's agent.Meter, when it has one (a tenant's quotas); a charge past a
// quota fails the node.
func (c *Call) invokeScript(ctx context.Context, rt sandbox.Runtime, script sandbox.Script, cfg map[string]any, static bool) error {
	inv := sandbox.Invocation{Node: c.Node, Type: c.Type, Script: script, Board: *c.Board, BoardBytes: c.boardBytes,
		ABI: c.ABI(), Run: c.RunInfo, Limits: c.Limits, Parallel: c.Parallel}
	if static {
		inv.Script.Config = cfg
	} else {
		inv.Config = cfg
	}
	meter := c.meter()
	start := time.Now()
	out, err := rt.Invoke(ctx, inv)
	spent := out.CPU // a worker's rusage (isolation: process)
	if spent <= 0 {
		spent = time.Since(start) // in process: the call's duration, an upper bound
	}
	if c.rs != nil {
		c.rs.cache.headers.cpu.Add(int64(spent)) // the run end's cpu_ms (REF 13.4.4)
	}
	if meter != nil {
		if qerr := meter.ChargeCPU(spent); qerr != nil && err == nil {
			err = fmt.Errorf("invoke node %q: %w", c.Node, qerr)
		}
	}
	if err != nil && ctx.Err() != nil {
		return err // stopped by the run's end (an interrupt past its grace, a cancel, a deadline): its writes are dropped
	}
	size, exact := out.Writes.ApplyMeasured(c.Board, c.boardBytes)
	if c.rs != nil && c.ForkID == "" && c.Board == c.rs.board {
		c.rs.changes.noteWrites(out.Writes, c.Board) // what the next checkpoint changes
	}
	c.boardAfter = 0
	if exact && err == nil {
		c.boardAfter = size
	}
	return err
}

// The node type factory's impl and its dependency roles besides
// ScriptRuntimeDep. The optional roles may be bound; the script node type
// does not use them yet.
const (
	NodeTypeImpl = "script"
	ToolsDep     = "tools"
	InferenceDep = "inference"
	RouterDep    = "router"
	WorkspaceDep = "workspace"
	SandboxDep   = "sandbox"
)

// NodeTypeSettings are the settings of a graph.NodeType/script resource
// (REF 5.3.4).
type NodeTypeSettings struct {
	// Type is the node type's name in graph documents. Required.
	Type string `json:"type"`
	// Source is the script every node of the type runs: a string, or
	// {file}/{embed}. Required.
	Source json.RawMessage `json:"source"`
	// Desc describes the type.
	Desc string `json:"desc,omitempty"`
	// Reads and Writes are the static roles of every node of the type.
	Reads  []Role `json:"reads,omitempty"`
	Writes []Role `json:"writes,omitempty"`
}

// NodeTypeFactory returns the factory of kind graph.NodeType, impl
// "script": a custom node type whose nodes run one script in the script
// runtime bound under "script_runtime" (required, type sandbox.Runtime),
// with the node's whole config as the script's config global. "tools",
// "inference", "router", "workspace" and "sandbox" may be bound; they are
// accepted for documents written against the full node type and are not
// used yet. The value is a *ScriptNodeType.
func NodeTypeFactory() resource.Factory {
	spec := resource.Spec{
		Kind: NodeTypeKind,
		Impl: NodeTypeImpl,
		Deps: []resource.DepSpec{
			{Name: ScriptRuntimeDep, Type: sandbox.Kind, Required: true},
			{Name: ToolsDep, Type: "tool.Assembly"},
			{Name: InferenceDep, Type: "inference.Assembly"},
			{Name: RouterDep, Type: "inference.Router"},
			{Name: WorkspaceDep, Type: "workspace.Workspace"},
			{Name: SandboxDep, Type: "sandbox.Sandbox"},
		},
	}
	return resource.FactoryFunc(spec, newScriptNodeType)
}

func newScriptNodeType(ctx context.Context, in resource.Input) (any, error) {
	op := fmt.Sprintf("build node type %q", in.Name)
	s, err := resource.DecodeTyped[NodeTypeSettings](in.Settings)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	v, ok := in.Dep(ScriptRuntimeDep)
	if !ok {
		return nil, fault.New(fault.Validation, op, "deps.%s is required", ScriptRuntimeDep)
	}
	rt, err := resource.As[sandbox.Runtime](ScriptRuntimeDep, v)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "")
	}
	if isAbsent(s.Source) {
		return nil, fault.New(fault.Validation, op, "settings.source is required")
	}
	text, err := in.ResolveText(ctx, s.Source)
	if err != nil {
		return nil, fault.Wrap(fault.KindOr(err, fault.Validation), err, op, "settings.source")
	}
	t, err := NewScriptNodeType(ScriptNodeTypeConfig{Type: s.Type, Desc: s.Desc, Source: text, Runtime: rt,
		Reads: s.Reads, Writes: s.Writes})
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	if err := sandbox.CheckScript(ctx, rt, sandbox.Script{Name: s.Type, Source: text}, sandbox.Limits{}); err != nil {
		return nil, fault.Wrap(fault.KindOr(err, fault.Validation), compileError(ScriptConfig{Source: s.Source}, err), op, "settings")
	}
	return t, nil
}

// ScriptNodeTypeConfig configures NewScriptNodeType.
type ScriptNodeTypeConfig struct {
	Type    string          // the type's name; required, no spaces
	Desc    string          // a description
	Source  string          // the script; required
	Runtime sandbox.Runtime // runs the script; required
	Reads   []Role
	Writes  []Role
}

// ScriptNodeType is a custom node type that runs a script (REF
// 5.3.4). Each node of the type runs Source in a fresh environment of the
// runtime, like a script node, with the node's config (after ${board}
// resolution) as the config global; its reads and writes are bound to the
// node at Build and enforced on every call (RoleHandler). It is immutable
// and safe for concurrent use.
type ScriptNodeType struct {
	cfg ScriptNodeTypeConfig
}

var _ NodeType = (*ScriptNodeType)(nil)

// NewScriptNodeType checks c and returns the node type. Errors are
// Validation.
func NewScriptNodeType(c ScriptNodeTypeConfig) (*ScriptNodeType, error) {
	const op = "new script node type"
	switch {
	case c.Type == "":
		return nil, fault.New(fault.Validation, op, "type is required")
	case strings.ContainsFunc(c.Type, isSpace):
		return nil, fault.New(fault.Validation, op, "type %q must not contain spaces", c.Type)
	case strings.TrimSpace(c.Source) == "":
		return nil, fault.New(fault.Validation, op, "type %q: source: the script is empty", c.Type)
	case agent.IsNil(c.Runtime):
		return nil, fault.New(fault.Validation, op, "type %q: no script runtime", c.Type)
	}
	if err := validateRoles("reads", c.Reads); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "type %q", c.Type)
	}
	if err := validateRoles("writes", c.Writes); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "type %q", c.Type)
	}
	c.Reads, c.Writes = append([]Role(nil), c.Reads...), append([]Role(nil), c.Writes...)
	return &ScriptNodeType{cfg: c}, nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// Name is the type's name in documents.
func (t *ScriptNodeType) Name() string { return t.cfg.Type }

// Desc is the type's description.
func (t *ScriptNodeType) Desc() string { return t.cfg.Desc }

// Reads and Writes return copies of the declared roles.
func (t *ScriptNodeType) Reads() []Role { return append([]Role(nil), t.cfg.Reads...) }

func (t *ScriptNodeType) Writes() []Role { return append([]Role(nil), t.cfg.Writes...) }

// Build binds the roles to the node's config (REF 5.1.5): a
// config_key role takes its name from the config, and a required one needs
// the key.
func (t *ScriptNodeType) Build(_ context.Context, in NodeInput) (Handler, error) {
	cfg := map[string]any{}
	if !isAbsent(in.Node.Config) {
		if err := json.Unmarshal(in.Node.Config, &cfg); err != nil || cfg == nil {
			return nil, fault.New(fault.Validation, "", "want an object, got %s", jsonKind(in.Node.Config))
		}
	}
	roles, err := BindRoles(cfg, t.cfg.Reads, t.cfg.Writes)
	if err != nil {
		return nil, err
	}
	script := sandbox.Script{Name: in.Node.ID, Source: t.cfg.Source}
	return &customHandler{rt: t.cfg.Runtime, script: script, roles: roles, empty: map[string]any{}}, nil
}

// customHandler runs one node of a ScriptNodeType.
type customHandler struct {
	rt     sandbox.Runtime
	script sandbox.Script
	roles  NodeRoles
	limits runtimeLimits
	empty  map[string]any // the config of a node that has none
}

var _ RoleHandler = (*customHandler)(nil)

// Roles are the node's bound roles.
func (h *customHandler) Roles() NodeRoles { return h.roles }

// Run invokes the type's script with the node's config.
func (h *customHandler) Run(ctx context.Context, c *Call) error {
	c.Limits = h.limits.tighten(h.rt, c.Limits)
	if c.Config == nil {
		return c.invokeScript(ctx, h.rt, h.script, h.empty, true)
	}
	return c.invokeScript(ctx, h.rt, h.script, c.Config, c.static)
}
