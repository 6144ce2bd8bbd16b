package local

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/tool"
)

// The tools of the delegation tool assembly.
const (
	ToolDelegate = "delegate"
	ToolStatus   = "delegation_status"
	ToolTargets  = "delegation_targets"
	DepService   = "service"
)

// Tools is the tool.Assembly/delegation resource: the tools delegate,
// delegation_status and delegation_targets, so that a model can delegate.
// It uses the delegation service of the run's host (delegation.ServiceFromHost), or
// the service it was built with when the host offers none. Delegation is
// granted as for scripts: the agent's capabilities must list "delegate" or
// "delegate:<target>"; a refused call is an error result.
type Tools struct {
	dir delegation.Directory
	svc delegation.Service // may be nil
}

var _ tool.Assembly = (*Tools)(nil)

// NewTools returns the assembly over dir and, as a fallback, svc (may be
// nil).
func NewTools(dir delegation.Directory, svc delegation.Service) *Tools {
	return &Tools{dir: dir, svc: svc}
}

// ToolsFactory returns the factory of tool.Assembly/delegation: deps
// "directory" (required) and "service" (optional), no settings.
func ToolsFactory() resource.Factory {
	spec := resource.Spec{Kind: tool.Kind, Impl: "delegation", Deps: []resource.DepSpec{
		{Name: DepDirectory, Type: delegation.DirectoryKind, Required: true},
		{Name: DepService, Type: delegation.ServiceKind},
	}}
	return resource.FactoryFunc(spec, func(_ context.Context, in resource.Input) (any, error) {
		if err := resource.DecodeSettings(in.Settings, &struct{}{}); err != nil {
			return nil, err
		}
		dir, err := resource.As[delegation.Directory](DepDirectory, in.Deps[DepDirectory])
		if err != nil {
			return nil, err
		}
		var svc delegation.Service
		if v, ok := in.Deps[DepService]; ok {
			if svc, err = resource.As[delegation.Service](DepService, v); err != nil {
				return nil, err
			}
		}
		return NewTools(dir, svc), nil
	})
}

// Definitions lists the three tools, sorted by name.
func (t *Tools) Definitions() []tool.Definition {
	return []tool.Definition{
		{Name: ToolDelegate, Description: "Run another agent with a message and return its answer.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"agent":{"type":"string"},"message":{"type":"string"},` +
				`"mode":{"type":"string","enum":["sync","async"]},"idempotency_key":{"type":"string"}},"required":["agent","message"]}`)},
		{Name: ToolStatus, Description: "Report the status of a delegation by id.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)},
		{Name: ToolTargets, Description: "List the agents this agent may delegate to.",
			Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
}

// Execute runs each call; a failed call is an error result.
func (t *Tools) Execute(ctx context.Context, b tool.Batch) ([]message.ToolResult, error) {
	if err := ctxErr(ctx, "delegation tools"); err != nil {
		return nil, err
	}
	out := make([]message.ToolResult, 0, len(b.Calls))
	for _, c := range b.Calls {
		content, err := t.call(ctx, b, c)
		r := message.ToolResult{ToolCallID: c.ID, Content: content}
		if err != nil {
			info := delegation.ErrorInfoOf(err)
			enc, _ := json.Marshal(info)
			r.Content, r.IsError = string(enc), true
		}
		out = append(out, r)
	}
	return out, nil
}

func (t *Tools) call(ctx context.Context, b tool.Batch, c message.ToolCall) (string, error) {
	switch c.Name {
	case ToolDelegate:
		var args struct {
			Agent          string          `json:"agent"`
			Message        string          `json:"message"`
			Mode           delegation.Mode `json:"mode,omitempty"`
			IdempotencyKey string          `json:"idempotency_key,omitempty"`
		}
		if err := decodeArgs(c, &args); err != nil {
			return "", err
		}
		req := delegation.Request{Mode: args.Mode, Target: args.Agent, Input: message.NewTextMessage(message.RoleUser, args.Message),
			IdempotencyKey: args.IdempotencyKey}
		return t.delegate(ctx, b, req)
	case ToolStatus:
		var args struct {
			ID string `json:"id"`
		}
		if err := decodeArgs(c, &args); err != nil {
			return "", err
		}
		return t.status(ctx, b, args.ID)
	case ToolTargets:
		if err := decodeArgs(c, &struct{}{}); err != nil {
			return "", err
		}
		return t.targets(ctx, b.Run)
	}
	return "", fault.New(fault.NotFound, "delegation tools", "no tool %q", c.Name)
}

func (t *Tools) delegate(ctx context.Context, b tool.Batch, req delegation.Request) (string, error) {
	if !grantsTarget(b.Run, req.Target) {
		return "", fault.New(fault.PolicyDenied, "delegation tools",
			"capability %q is not granted to agent %q", "delegate:"+req.Target, b.Run.AgentID)
	}
	svc, err := t.service(b.Host)
	if err != nil {
		return "", err
	}
	if b.Host != nil && !agent.IsNil(b.Host) {
		ctx = agent.ContextWithHost(ctx, b.Host)
	}
	resp, err := svc.Delegate(delegation.WithCaller(ctx, b.Run.AgentID), req)
	if err != nil {
		return "", err
	}
	return encode(resp)
}

func (t *Tools) status(ctx context.Context, b tool.Batch, id string) (string, error) {
	svc, err := t.service(b.Host)
	if err != nil {
		return "", err
	}
	resp, err := svc.Get(ctx, id)
	if err != nil {
		return "", err
	}
	return encode(resp)
}

func (t *Tools) targets(ctx context.Context, run agent.Run) (string, error) {
	all, err := t.dir.List(ctx)
	if err != nil {
		return "", err
	}
	granted := slices.DeleteFunc(all, func(tg delegation.Target) bool { return !grantsTarget(run, tg.ID) })
	return encode(granted)
}

// service is the host's service, else the one the assembly was built with.
func (t *Tools) service(h agent.Host) (delegation.Service, error) {
	if svc, ok := delegation.ServiceFromHost(h); ok {
		return svc, nil
	}
	if t.svc != nil && !agent.IsNil(t.svc) {
		return t.svc, nil
	}
	return nil, fault.New(fault.PolicyDenied, "delegation tools", "the run's host offers no delegation service")
}

// grantsTarget reports whether run's capabilities grant delegation to
// target: "delegate" or "delegate:<target>" (the defaults grant none).
func grantsTarget(run agent.Run, target string) bool {
	return slices.ContainsFunc(run.Capabilities, func(c string) bool {
		return c == agent.CapDelegate || (strings.HasPrefix(c, agent.CapDelegate+":") && c[len(agent.CapDelegate)+1:] == target)
	})
}

func decodeArgs(c message.ToolCall, out any) error {
	raw := c.Arguments
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	if err := resource.DecodeSettings([]byte(raw), out); err != nil {
		return fault.Wrap(fault.Validation, err, "delegation tools", "tool %q: arguments", c.Name)
	}
	return nil
}

func encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fault.Wrap(fault.Internal, err, "delegation tools", "encode the result")
	}
	return string(b), nil
}
