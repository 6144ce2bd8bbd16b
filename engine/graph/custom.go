package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
)

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
func (t *ScriptNodeType) Reads() []Role  { return append([]Role(nil), t.cfg.Reads...) }
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
