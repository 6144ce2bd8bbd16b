package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/tool"
)

// dynAgent is an agent registered at run time: what Reload needs to bind it
// again (its definition and the WithToolAssembly name) and what the
// generation serves (the bound instance and its tool assembly).
type dynAgent struct {
	id       string
	def      agent.Definition
	assembly string // WithToolAssembly; "" means the catalog's default
	inst     *agent.Agent
	tools    tool.Assembly // nil when the document has no dynamic_catalog
}

// RegisterAgentOption configures RegisterAgent.
type RegisterAgentOption func(*registerConfig) error

type registerConfig struct{ assembly string }

// WithToolAssembly gives the registered agent the tool.Assembly resource
// name of the serving generation instead of the dynamic catalog's default.
// An empty name is a Validation error.
func WithToolAssembly(resource string) RegisterAgentOption {
	return func(c *registerConfig) error {
		if strings.TrimSpace(resource) == "" {
			return fault.New(fault.Validation, "register agent", "WithToolAssembly: resource name must not be empty")
		}
		c.assembly = strings.TrimSpace(resource)
		return nil
	}
}

// UnregisterAgentOption configures UnregisterAgent.
type UnregisterAgentOption func(*unregisterConfig) error

type unregisterConfig struct{ timeout time.Duration }

// WithRemoveTimeout bounds how long UnregisterAgent waits for the agent's
// active turns to end, on top of its ctx. d must be > 0 (Validation).
func WithRemoveTimeout(d time.Duration) UnregisterAgentOption {
	return func(c *unregisterConfig) error {
		if d <= 0 {
			return fault.New(fault.Validation, "unregister agent", "WithRemoveTimeout: %v must be > 0", d)
		}
		c.timeout = d
		return nil
	}
}

// checkAgentID refuses an empty id, one with surrounding white space or
// one holding a control character
// (REF 1.11.1).
func checkAgentID(op, id string) error {
	if id == "" || strings.TrimSpace(id) != id || strings.ContainsFunc(id, unicode.IsControl) {
		return fault.New(fault.Validation, op, "agent id %q must be non-empty with no leading or trailing white space and no control character", id)
	}
	return nil
}

// RegisterAgent binds def as agent id in the serving generation, the way
// deployment binds a document agent (deploy.BindAgent), and makes it
// available to sessions and to Agent (REF 1.11). The agent gets the
// tool assembly named by WithToolAssembly, or the dynamic catalog's
// default. Any failure closes what was built: no partial registration
// remains. An id that is already registered, or that is a deployed agent,
// is a Conflict. Reload binds the agent again against each new generation.
// After Close, or once Drain was called, it returns NotAvailable. The
// returned agent belongs to the runtime: do not close it.
func (rt *Runtime) RegisterAgent(ctx context.Context, id string, def agent.Definition, opts ...RegisterAgentOption) (*agent.Agent, error) {
	const op = "register agent"
	var cfg registerConfig
	if err := checkCall(ctx, op, id, opts, &cfg); err != nil {
		return nil, err
	}
	if err := def.Validate(); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "%q", id)
	}
	rt.lifecycle.Lock()
	defer rt.lifecycle.Unlock()
	if err := rt.usable(op, true); err != nil {
		return nil, err
	}
	g := rt.current()
	if _, ok := g.dynamicAgent(id); ok {
		return nil, fault.New(fault.Conflict, op, "agent %q is already registered", id)
	}
	if _, ok := g.result.Agent(id); ok {
		return nil, fault.New(fault.Conflict, op, "agent %q is a deployed agent", id)
	}
	if err := checkTenant(g.cfg, def.Tenant); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "%q", id)
	}
	e, err := bindDynamic(ctx, op, g, id, def, cfg.assembly)
	if err != nil {
		return nil, err
	}
	rt.sessions.ReopenAgent(id)
	g.putDynamic(e)
	rt.publish(ctx, event.SubjectAgentRegistered(id), lifecyclePayload(id, def))
	return e.inst, nil
}

// bindDynamic binds def against g's deployment and resolves its tool
// assembly; on failure it closes the bound instance.
func bindDynamic(ctx context.Context, op string, g *generation, id string, def agent.Definition, assembly string) (*dynAgent, error) {
	inst, err := deploy.BindAgent(ctx, id, def, g.result, deploy.Options{})
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "")
	}
	tools, err := g.catalogFor(id, assembly)
	if err != nil {
		if cerr := inst.Close(); cerr != nil {
			err = fmt.Errorf("%w (closing the agent: %v)", err, cerr)
		}
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return &dynAgent{id: id, def: def, assembly: assembly, inst: inst, tools: tools}, nil
}

// UnregisterAgent removes the agent id registered with RegisterAgent
// (REF 1.11.9–1.11.12): new opens fail with NotFound, the call waits,
// bounded by ctx and WithRemoveTimeout, for the agent's active turns to end
// on their own, then closes its sessions and its instance. An unknown id is
// a no-op; a deployed agent is a Conflict. When the wait fails the
// registration is restored, the sessions are left as they were, new opens
// keep failing until a retry succeeds, and the wait's error is returned.
// After Close it returns NotAvailable.
func (rt *Runtime) UnregisterAgent(ctx context.Context, id string, opts ...UnregisterAgentOption) error {
	const op = "unregister agent"
	var cfg unregisterConfig
	if err := checkCall(ctx, op, id, opts, &cfg); err != nil {
		return err
	}
	rt.lifecycle.Lock()
	defer rt.lifecycle.Unlock()
	if err := rt.usable(op, false); err != nil {
		return err
	}
	g := rt.current()
	e, ok := g.dynamicAgent(id)
	if !ok {
		if _, deployed := g.result.Agent(id); deployed {
			return fault.New(fault.Conflict, op, "agent %q is a deployed agent; remove it from the deployment document", id)
		}
		return nil
	}
	g.removeDynamic(id)
	rctx := ctx
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	if err := rt.sessions.RemoveAgent(rctx, id); err != nil {
		g.putDynamic(e)
		return fmt.Errorf("%s %q: %w", op, id, err)
	}
	if err := e.inst.Close(); err != nil {
		return fault.Wrap(fault.KindOr(err, fault.Internal), err, op, "close agent %q", id)
	}
	rt.publish(ctx, event.SubjectAgentRemoved(id), lifecyclePayload(id, e.def))
	return nil
}

// Agent returns the agent id of the serving generation: a registered agent
// first, then a deployed one (REF 1.11.8). The agent belongs to the
// runtime; do not close it, and do not keep it past a Reload or Close.
// After Close it reports false.
func (rt *Runtime) Agent(id string) (*agent.Agent, bool) {
	g := rt.current()
	if g == nil {
		return nil, false
	}
	return g.Agent(id)
}

// AgentNames lists the agents of the serving generation, registered and
// deployed, sorted and deduplicated. After Close it returns nil.
func (rt *Runtime) AgentNames() []string {
	g := rt.current()
	if g == nil {
		return nil
	}
	return g.AgentNames()
}

// checkCall checks the arguments every registry call shares and applies
// the options (REF 1.11.1).
func checkCall[C any, O ~func(*C) error](ctx context.Context, op string, id string, opts []O, cfg *C) error {
	if ctx == nil {
		return fault.New(fault.Validation, op, "ctx must not be nil")
	}
	if err := checkAgentID(op, id); err != nil {
		return err
	}
	for _, o := range opts {
		if o == nil {
			return fault.New(fault.Validation, op, "option must not be nil")
		}
		if err := o(cfg); err != nil {
			return err
		}
	}
	return nil
}

func lifecyclePayload(id string, def agent.Definition) event.AgentLifecyclePayload {
	return event.AgentLifecyclePayload{AgentID: id, Name: def.Card.Name, Description: def.Card.Description}
}
