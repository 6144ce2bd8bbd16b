package graph

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/corral-rt/corral/fault"
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
		bin, err := in.ResolveText(ctx, c.Module)
		if err != nil {
			return s, fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "module")
		}
		if c.Entry == "" {
			return s, fault.New(fault.Validation, "", "entry: a module needs the export to call")
		}
		s.Module = []byte(bin)
	}
	return s, nil
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

// invokeScript runs script on rt as c's node, with cfg as its config (in
// the script when static, the same map at every call: the runtime may
// keep what it made of it), and makes the call's board writes on c.Board.
// The engine measures the board as it applies them, from the size it
// knew, so that it need not measure the board after the wave: nothing the
// runtime reports is taken on trust.
func (c *Call) invokeScript(ctx context.Context, rt sandbox.Runtime, script sandbox.Script, cfg map[string]any, static bool) error {
	inv := sandbox.Invocation{Node: c.Node, Type: c.Type, Script: script, Board: *c.Board, BoardBytes: c.boardBytes,
		ABI: c.ABI(), Run: c.RunInfo, Limits: c.Limits, Parallel: c.Parallel}
	if static {
		inv.Script.Config = cfg
	} else {
		inv.Config = cfg
	}
	out, err := rt.Invoke(ctx, inv)
	size, exact := out.Writes.ApplyMeasured(c.Board, c.boardBytes)
	c.boardAfter = 0
	if exact && err == nil {
		c.boardAfter = size
	}
	return err
}
