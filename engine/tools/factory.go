package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox"
)

// The factory's impl and dependency role.
const (
	Impl                     = "script"
	ScriptRuntimeDep         = "script_runtime"
	DefaultScriptRuntimeName = "js"
)

// Settings are the settings of a tool.Assembly/script resource.
type Settings struct {
	// ScriptRuntimeName is the runtime of tools that name none; default
	// "js".
	ScriptRuntimeName string `json:"script_runtime_name,omitempty"`
	// Limits tighten the runtimes' limits for every call of these tools.
	Limits LimitSettings `json:"limits,omitzero"`
	// Tools are the tools, at least one.
	Tools []ToolSettings `json:"tools"`
}

// ToolSettings declare one tool. Exactly one of Source (JavaScript) and
// Module (WebAssembly, with Entry) is set.
type ToolSettings struct {
	// Name is what the model calls: 1 to 64 of a-z, A-Z, 0-9, _ and -.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments (JSON Schema 2020-12,
	// see CompileSchema): an object schema, inline or {file}/{embed} (YAML
	// or JSON). Absent: an object with any properties.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Runtime names the bound script runtime; empty means
	// script_runtime_name.
	Runtime string `json:"runtime,omitempty"`
	// Source is JavaScript: a string, or {file}/{embed}.
	Source json.RawMessage `json:"source,omitempty"`
	// Module is a WebAssembly module as {file}/{embed}, and Entry the
	// export to call.
	Module json.RawMessage `json:"module,omitempty"`
	Entry  string          `json:"entry,omitempty"`
}

// LimitSettings are sandbox.Limits as a document writes them: times are Go
// durations ("5s").
type LimitSettings struct {
	WallTime      string `json:"wall_time,omitempty"`
	MemoryBytes   int64  `json:"memory_bytes,omitempty"`
	StackDepth    int    `json:"stack_depth,omitempty"`
	MaxValueBytes int64  `json:"max_value_bytes,omitempty"`
	MaxEvents     int    `json:"max_events,omitempty"`
	MaxEventBytes int64  `json:"max_event_bytes,omitempty"`
	MaxLogBytes   int64  `json:"max_log_bytes,omitempty"`
}

// Limits converts the settings; a malformed duration or a negative value
// is a Validation error.
func (s LimitSettings) Limits() (sandbox.Limits, error) {
	l := sandbox.Limits{MemoryBytes: s.MemoryBytes, StackDepth: s.StackDepth, MaxValueBytes: s.MaxValueBytes,
		MaxEvents: s.MaxEvents, MaxEventBytes: s.MaxEventBytes, MaxLogBytes: s.MaxLogBytes}
	if s.WallTime != "" {
		d, err := time.ParseDuration(s.WallTime)
		if err != nil {
			return l, fault.Wrap(fault.Validation, err, "", "limits.wall_time: want a duration like \"5s\"")
		}
		l.WallTime = d
	}
	if err := l.Validate(); err != nil {
		return l, fault.Wrap(fault.Validation, err, "", "limits")
	}
	return l, nil
}

// namePattern is what a tool name may be (what model providers accept).
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Factory returns the factory of kind tool.Assembly, impl "script": tools
// declared in the document, each run in a sandbox.Runtime bound under
// "script_runtime" (Many, type sandbox.Runtime): "script_runtime" is the
// runtime called script_runtime_name ("js" by default) and
// "script_runtime.<name>" the runtime called <name>, as for the graph
// engine. The value is an *Assembly.
func Factory() resource.Factory {
	spec := resource.Spec{
		Kind: tool.Kind,
		Impl: Impl,
		Deps: []resource.DepSpec{{Name: ScriptRuntimeDep, Type: sandbox.Kind, Many: true}},
	}
	return resource.FactoryFunc(spec, newFromInput)
}

func newFromInput(ctx context.Context, in resource.Input) (any, error) {
	op := fmt.Sprintf("build tool assembly %q", in.Name)
	s, err := resource.DecodeTyped[Settings](in.Settings)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	if s.ScriptRuntimeName == "" {
		s.ScriptRuntimeName = DefaultScriptRuntimeName
	}
	rts, err := runtimesFromDeps(in, s.ScriptRuntimeName)
	if err != nil {
		return nil, fault.Wrap(fault.KindOr(err, fault.Validation), err, op, "")
	}
	return build(ctx, in, s, rts, op)
}

// New builds an assembly from settings outside a deployment document:
// runtimes are the script runtimes by name, and sources and schemas must
// be inline ({file} needs a document's loader).
func New(ctx context.Context, s Settings, runtimes map[string]sandbox.Runtime) (*Assembly, error) {
	const op = "new tool assembly"
	if s.ScriptRuntimeName == "" {
		s.ScriptRuntimeName = DefaultScriptRuntimeName
	}
	return build(ctx, resource.Input{Name: "tools"}, s, maps.Clone(runtimes), op)
}

// build checks and resolves every tool of s.
func build(ctx context.Context, in resource.Input, s Settings, rts map[string]sandbox.Runtime, op string) (*Assembly, error) {
	limits, err := s.Limits.Limits()
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	if len(s.Tools) == 0 {
		return nil, fault.New(fault.Validation, op, "settings.tools: at least one tool is required")
	}
	a := &Assembly{tools: make(map[string]*scriptTool, len(s.Tools)), limits: limits}
	for i, ts := range s.Tools {
		t, err := buildTool(ctx, in, ts, rts, s.ScriptRuntimeName, limits)
		if err != nil {
			return nil, fault.Wrap(fault.KindOr(err, fault.Validation), err, op, "settings.tools[%d]", i)
		}
		if _, dup := a.tools[t.def.Name]; dup {
			return nil, fault.New(fault.Validation, op, "settings.tools[%d].name: tool %q is declared twice", i, t.def.Name)
		}
		a.tools[t.def.Name] = t
		a.limits = a.limits.Tighten(t.rtLimits)
	}
	for _, name := range slices.Sorted(maps.Keys(a.tools)) {
		a.defs = append(a.defs, a.tools[name].def)
	}
	return a, nil
}

// buildTool checks and resolves one tool declaration.
func buildTool(ctx context.Context, in resource.Input, ts ToolSettings, rts map[string]sandbox.Runtime,
	defaultRT string, limits sandbox.Limits) (*scriptTool, error) {
	if !namePattern.MatchString(ts.Name) {
		return nil, fault.New(fault.Validation, "", "name: %q is not 1 to 64 of A-Z, a-z, 0-9, _ and -", abbreviate(ts.Name))
	}
	rtName := ts.Runtime
	if rtName == "" {
		rtName = defaultRT
	}
	rt, ok := rts[rtName]
	if !ok {
		return nil, fault.New(fault.Validation, "", "runtime: script runtime %q is not bound (bound: %s)", rtName, boundNames(rts))
	}
	t := &scriptTool{def: tool.Definition{Name: ts.Name, Description: ts.Description}, rt: rt, limits: limits}
	if l, ok := rt.(interface{ Limits() sandbox.Limits }); ok {
		t.rtLimits = l.Limits()
	}
	if err := t.loadSchema(ctx, in, ts.Parameters); err != nil {
		return nil, err
	}
	script, err := loadScript(ctx, in, ts)
	if err != nil {
		return nil, err
	}
	// Compile the tool now, so that one that does not compile fails the
	// build rather than every call.
	if err := sandbox.CheckScript(ctx, rt, script, limits); err != nil {
		field := "source"
		if len(script.Module) > 0 {
			field = "module"
		}
		return nil, fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "%s", field)
	}
	if script.Source != "" && rt.Name() == DefaultScriptRuntimeName {
		script.Source = jsReturnPrefix + script.Source + jsReturnSuffix
	}
	t.script = script
	return t, nil
}

// loadSchema resolves and compiles the parameters schema; it must be an
// object schema.
func (t *scriptTool) loadSchema(ctx context.Context, in resource.Input, raw json.RawMessage) error {
	if isAbsent(raw) {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	doc, err := in.ResolveDocument(ctx, raw)
	if err != nil {
		return fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "parameters")
	}
	schema, err := CompileSchema(doc)
	if err != nil {
		return fault.Wrap(fault.Validation, err, "", "parameters")
	}
	if !slices.Equal(schema.types, []string{"object"}) {
		return fault.New(fault.Validation, "", "parameters: the arguments schema must have type: object")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, doc); err != nil {
		return fault.Wrap(fault.Validation, err, "", "parameters")
	}
	t.schema = schema
	t.def.Parameters = compact.Bytes()
	return nil
}

// loadScript resolves the source or the module of a tool.
func loadScript(ctx context.Context, in resource.Input, ts ToolSettings) (sandbox.Script, error) {
	s := sandbox.Script{Name: ts.Name, Entry: ts.Entry}
	switch src, mod := !isAbsent(ts.Source), !isAbsent(ts.Module); {
	case src == mod:
		return s, fault.New(fault.Validation, "", "source: exactly one of source and module is required")
	case src:
		if ts.Entry != "" {
			return s, fault.New(fault.Validation, "", "entry: only a module has an entry")
		}
		text, err := in.ResolveText(ctx, ts.Source)
		if err != nil {
			return s, fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "source")
		}
		if strings.TrimSpace(text) == "" {
			return s, fault.New(fault.Validation, "", "source: the script is empty")
		}
		s.Source = text
	default:
		if ts.Entry == "" {
			return s, fault.New(fault.Validation, "", "entry: a module needs the export to call")
		}
		if _, ok := resource.SourceOf(ts.Module); !ok {
			return s, fault.New(fault.Validation, "", "module: want {file: path} or {embed: name}")
		}
		bin, err := in.ResolveModule(ctx, ts.Module)
		if err != nil {
			return s, fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "module")
		}
		s.Module = bin
	}
	return s, nil
}

// runtimesFromDeps maps the script_runtime deps to runtime names.
func runtimesFromDeps(in resource.Input, defaultName string) (map[string]sandbox.Runtime, error) {
	return sandbox.RuntimesFromDeps(in, ScriptRuntimeDep, defaultName)
}

func boundNames(rts map[string]sandbox.Runtime) string {
	if len(rts) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(rts)), ", ")
}

// isAbsent reports whether a raw settings value is missing or null.
func isAbsent(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t == "" || t == "null"
}
