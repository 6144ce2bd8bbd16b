package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
)

// The factory's kind, impl and dependency role.
const (
	EngineKind        = "agent.Engine"
	Impl              = "graph"
	ScriptRuntimeDep  = "script_runtime"
	NodeTypeDep       = "node_type"
	settingsGraphPath = "settings.graph"
)

// NodeTypeKind is the resource kind of node types a document mounts
// through the node_type deps: a resource whose value is a NodeType.
const NodeTypeKind = "graph.NodeType"

// Settings are the settings of an agent.Engine/graph (REF 5.1.6).
type Settings struct {
	// Graph is the graph document: an inline object, or {file}/{embed}
	// naming a YAML or JSON file. Required.
	Graph json.RawMessage `json:"graph"`
	// ScriptRuntimeName is the default runtime of script nodes and the
	// runtime of conditions; default "js".
	ScriptRuntimeName string         `json:"script_runtime_name,omitempty"`
	Build             BuildSettings  `json:"build,omitzero"`
	Limits            LimitsSettings `json:"limits,omitzero"`
}

// BuildSettings are settings.build.
type BuildSettings struct {
	MaxIterations        *int             `json:"max_iterations,omitempty"`          // default 100; > 0
	Timeout              Duration         `json:"timeout,omitempty"`                 // 0 = none
	RunEndPublishTimeout *Duration        `json:"run_end_publish_timeout,omitempty"` // default 5s; > 0
	MaxNodeRetries       int              `json:"max_node_retries,omitempty"`        // >= 0
	InterruptGrace       *Duration        `json:"interrupt_grace,omitempty"`         // default 100ms; > 0
	Parallel             ParallelSettings `json:"parallel,omitzero"`
}

// ParallelSettings are settings.build.parallel.
type ParallelSettings struct {
	Enabled        bool          `json:"enabled,omitempty"`
	BranchTimeout  Duration      `json:"branch_timeout,omitempty"`
	MaxConcurrency int           `json:"max_concurrency,omitempty"`
	MaxBranches    int           `json:"max_branches,omitempty"`
	MergeStrategy  MergeStrategy `json:"merge_strategy,omitempty"`
}

// LimitsSettings are settings.limits: sandbox.Limits with durations
// written as Go durations ("2s"). They only tighten the runtime's limits.
type LimitsSettings struct {
	WallTime      Duration `json:"wall_time,omitempty"`
	RunTime       Duration `json:"run_time,omitempty"`
	MemoryBytes   int64    `json:"memory_bytes,omitempty"`
	StackDepth    int      `json:"stack_depth,omitempty"`
	MaxValueBytes int64    `json:"max_value_bytes,omitempty"`
	MaxEvents     int      `json:"max_events,omitempty"`
	MaxEventBytes int64    `json:"max_event_bytes,omitempty"`
	MaxLogBytes   int64    `json:"max_log_bytes,omitempty"`
	MaxBoardBytes int64    `json:"max_board_bytes,omitempty"`
}

// Limits converts l.
func (l LimitsSettings) Limits() sandbox.Limits {
	return sandbox.Limits{
		WallTime: time.Duration(l.WallTime), RunTime: time.Duration(l.RunTime), MemoryBytes: l.MemoryBytes,
		StackDepth: l.StackDepth, MaxValueBytes: l.MaxValueBytes, MaxEvents: l.MaxEvents,
		MaxEventBytes: l.MaxEventBytes, MaxLogBytes: l.MaxLogBytes, MaxBoardBytes: l.MaxBoardBytes,
	}
}

// Duration is a time.Duration written in settings as a Go duration string
// ("500ms", "2m") or as a number of nanoseconds.
type Duration time.Duration

// UnmarshalJSON reads "1.5s" or 1500000000.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fault.New(fault.Validation, "decode duration", "%q is not a duration like \"5s\"", s)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fault.New(fault.Validation, "decode duration", "want a duration like \"5s\", got %s", bytes.TrimSpace(b))
	}
	*d = Duration(n)
	return nil
}

// MarshalJSON writes the Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Factory returns the factory of kind agent.Engine, impl "graph". Its
// value is an *Engine.
//
// Dependencies: "script_runtime" (Many, type sandbox.Runtime, optional; a
// graph with script nodes or conditions needs one). A binding under
// "script_runtime.<name>" is the runtime called <name>; a binding under the
// bare "script_runtime" is the runtime called script_runtime_name ("js" by
// default). Binding both "script_runtime" and
// "script_runtime.<script_runtime_name>" is a Conflict. A script node's
// runtime key picks a runtime by that name; conditions use the one called
// script_runtime_name. "node_type" and "node_type.<suffix>" (Many, type
// graph.NodeType, optional) mount node types: each value is a NodeType,
// known by its own Name; a name that clashes with another type is a
// Conflict. "model" and "model.<name>" (Many, type model.Provider,
// optional) are the providers of inference nodes. Node types see every dep
// of the engine in NodeInput.Deps.
func Factory() resource.Factory {
	spec := resource.Spec{
		Kind: EngineKind,
		Impl: Impl,
		Deps: []resource.DepSpec{
			{Name: ScriptRuntimeDep, Type: sandbox.Kind, Many: true},
			{Name: NodeTypeDep, Type: NodeTypeKind, Many: true},
			{Name: ModelDep, Type: model.Kind, Many: true},
			{Name: ToolsDep, Type: "tool.Assembly"},
		},
	}
	return resource.FactoryFunc(spec, newEngine)
}

func newEngine(ctx context.Context, in resource.Input) (any, error) {
	op := fmt.Sprintf("build graph engine %q", in.Name)
	s, err := resource.DecodeTyped[Settings](in.Settings)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	opts, err := s.options()
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "")
	}
	if opts.Runtimes, err = runtimesFromDeps(in, opts.ScriptRuntimeName); err != nil {
		return nil, fault.Wrap(fault.KindOr(err, fault.Validation), err, op, "")
	}
	if opts.NodeTypes, err = nodeTypesFromDeps(in); err != nil {
		return nil, fault.Wrap(fault.KindOr(err, fault.Validation), err, op, "")
	}
	opts.ResolveText, opts.ResolveModule, opts.Deps = in.ResolveText, in.ResolveModule, in.Deps
	if isAbsent(s.Graph) {
		return nil, fault.New(fault.Validation, op, "%s is required", settingsGraphPath)
	}
	g, err := resolveGraph(ctx, in, s.Graph)
	if err != nil {
		return nil, fault.Wrap(fault.KindOr(err, fault.Validation), err, op, "%s", settingsGraphPath)
	}
	doc, err := Parse(g.raw)
	if err != nil {
		return nil, g.place(op, err)
	}
	e, err := Build(ctx, doc, opts)
	if err != nil {
		return nil, g.place(op, err)
	}
	return e, nil
}

// graphSource is a graph document as the engine's settings give it:
// inline, or loaded from a {file}/{embed} reference (then file names it
// and data is its text, to place errors in it).
type graphSource struct {
	raw  json.RawMessage
	file string
	data []byte
}

func resolveGraph(ctx context.Context, in resource.Input, raw json.RawMessage) (graphSource, error) {
	src, ok := resource.SourceOf(raw)
	if !ok {
		return graphSource{raw: raw}, nil
	}
	data, err := in.Resolve(ctx, src)
	if err != nil {
		return graphSource{}, err
	}
	g := graphSource{file: src.File, data: data}
	if src.File == "" {
		g.file = "embed:" + src.Embed
	}
	// Check the size before the document is converted.
	if len(data) > MaxDocumentBytes {
		return graphSource{}, &resource.FieldError{File: g.file, Msg: fmt.Sprintf(
			"the document is %d bytes, more than the %d allowed", len(data), MaxDocumentBytes)}
	}
	if g.raw, err = resource.YAMLToJSON(data); err != nil {
		return graphSource{}, &resource.FieldError{File: g.file, Line: yamlLine(err), Msg: err.Error()}
	}
	return g, nil
}

// yamlLine reads the line out of a YAMLToJSON error ("yaml: line 3: …").
func yamlLine(err error) int {
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		var n int
		if _, e := fmt.Sscanf(msg[i:], "line %d", &n); e == nil {
			return n
		}
	}
	return 0
}

// place turns the document errors of the graph into *resource.FieldError
// values at their own place: the line and path in the graph's file, or
// the path under settings.graph for an inline graph. Other errors keep
// their text, their path under settings.graph.
func (g graphSource) place(op string, err error) error {
	kind := fault.KindOr(err, fault.Validation)
	var placed []error
	for _, e := range documentErrors(err) {
		fe := fieldOf(e)
		switch {
		case fe.File != "": // placed in a file of its own (a script's)
		case g.file != "":
			fe.File, fe.Line = g.file, resource.LineWithin(g.data, fe.At(), fe.Within)
		default:
			fe = fe.Under("graph")
		}
		placed = append(placed, fe)
	}
	if len(placed) == 0 {
		return fault.Wrap(kind, WithPathPrefix(err, settingsGraphPath), op, "")
	}
	return fault.Wrap(kind, errors.Join(placed...), op, "")
}

// documentErrors returns the DocumentErrors of err: err itself or the
// errors of a join.
func documentErrors(err error) []*DocumentError {
	var de *DocumentError
	if errors.As(err, &de) && err == error(de) {
		return []*DocumentError{de}
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if errors.As(err, &de) {
			return []*DocumentError{de}
		}
		return nil
	}
	var out []*DocumentError
	for _, e := range j.Unwrap() {
		out = append(out, documentErrors(e)...)
	}
	return out
}

// fieldOf turns a DocumentError into a FieldError whose path reaches the
// value inside a node's config when the cause names one.
func fieldOf(de *DocumentError) *resource.FieldError {
	fe := &resource.FieldError{Path: de.Path, Msg: de.Msg, Kind: de.Kind}
	var inner *resource.FieldError
	switch {
	case errors.As(de.Err, &inner) && inner.File != "":
		out := *inner
		out.Msg = joinMsg(de.Msg, inner.Msg)
		return &out
	case errors.As(de.Err, &inner):
		fe.Path, fe.Key, fe.Within = resource.JoinPath(de.Path, inner.Path), inner.Key, inner.Within
		fe.Msg = joinMsg(de.Msg, inner.Msg)
	case de.Err != nil:
		fe.Msg = joinMsg(de.Msg, de.Err.Error())
	}
	if fe.Kind == nil {
		fe.Kind = fault.KindOr(de.Err, fault.Validation)
	}
	return fe
}

func joinMsg(a, b string) string {
	if a == "" {
		return b
	}
	return a + ": " + b
}

// options turns the settings into Options (without runtimes).
func (s Settings) options() (Options, error) {
	b := s.Build
	o := Options{
		ScriptRuntimeName: s.ScriptRuntimeName, Timeout: time.Duration(b.Timeout), MaxNodeRetries: b.MaxNodeRetries,
		Parallel: ParallelOptions{
			Enabled: b.Parallel.Enabled, BranchTimeout: time.Duration(b.Parallel.BranchTimeout),
			MaxConcurrency: b.Parallel.MaxConcurrency, MaxBranches: b.Parallel.MaxBranches, MergeStrategy: b.Parallel.MergeStrategy,
		},
		Limits: s.Limits.Limits(),
	}
	if b.MaxIterations != nil {
		if *b.MaxIterations <= 0 {
			return o, fault.New(fault.Validation, "", "settings.build.max_iterations must be > 0, got %d", *b.MaxIterations)
		}
		o.MaxIterations = *b.MaxIterations
	}
	if b.RunEndPublishTimeout != nil {
		if *b.RunEndPublishTimeout <= 0 {
			return o, fault.New(fault.Validation, "", "settings.build.run_end_publish_timeout must be > 0, got %s",
				time.Duration(*b.RunEndPublishTimeout))
		}
		o.RunEndPublishTimeout = time.Duration(*b.RunEndPublishTimeout)
	}
	if b.InterruptGrace != nil {
		if *b.InterruptGrace <= 0 {
			return o, fault.New(fault.Validation, "", "settings.build.interrupt_grace must be > 0, got %s",
				time.Duration(*b.InterruptGrace))
		}
		o.InterruptGrace = time.Duration(*b.InterruptGrace)
	}
	if _, err := o.withDefaults(); err != nil {
		return o, err
	}
	return o, nil
}

// runtimesFromDeps maps the script_runtime deps to runtime names (see
// Factory).
func runtimesFromDeps(in resource.Input, defaultName string) (map[string]sandbox.Runtime, error) {
	if defaultName == "" {
		defaultName = DefaultScriptRuntimeName
	}
	return sandbox.RuntimesFromDeps(in, ScriptRuntimeDep, defaultName)
}

// nodeTypesFromDeps returns the node types bound under node_type deps. A
// type named like a built-in type or like another bound type is a
// Conflict naming both (REF 5.3.4).
func nodeTypesFromDeps(in resource.Input) ([]NodeType, error) {
	var out []NodeType
	keys := map[string]string{}
	for _, d := range in.DepsMany(NodeTypeDep) {
		t, err := resource.As[NodeType](d.Key, d.Value)
		if err != nil {
			return nil, err
		}
		if agent.IsNil(t) {
			return nil, fault.New(fault.Validation, "", "deps.%s: the node type is nil", d.Key)
		}
		name := t.Name()
		if isBuiltinNodeType(name) {
			return nil, fault.New(fault.Conflict, "", "deps.%s: node type %q clashes with the built-in node type %q", d.Key, name, name)
		}
		if other, dup := keys[name]; dup {
			return nil, fault.New(fault.Conflict, "", "deps.%s and deps.%s both mount node type %q", other, d.Key, name)
		}
		keys[name] = d.Key
		out = append(out, t)
	}
	return out, nil
}
