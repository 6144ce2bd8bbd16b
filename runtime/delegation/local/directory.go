package local

import (
	"context"
	"slices"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/resource"
)

// AgentSource is what the local directory reads its targets from. A
// *deploy.Result is one; a runtime whose agents change while it runs can
// bind a source of its own with AgentsBinder.
type AgentSource interface {
	Agent(id string) (*agent.Agent, bool)
	AgentNames() []string
}

// AgentsBinder is implemented by the local directory: BindAgents replaces
// the source of its targets. The deployment binds its own result at wire
// time; a runtime that registers agents at run time may bind a source that
// also sees those.
type AgentsBinder interface {
	BindAgents(src AgentSource) error
}

// Directory is the delegation.Directory/local resource: the agents of
// the deployment it belongs to. It is bound at wire time and answers
// NotAvailable before. It is safe for concurrent use.
type Directory struct {
	mu  sync.RWMutex
	src AgentSource
}

var (
	_ delegation.Directory      = (*Directory)(nil)
	_ AgentSource               = (*Directory)(nil)
	_ AgentsBinder              = (*Directory)(nil)
	_ resource.DeploymentBinder = (*Directory)(nil)
)

// NewDirectory returns a directory over src; a nil src leaves it
// unbound until BindAgents or BindDeployment.
func NewDirectory(src AgentSource) *Directory {
	return &Directory{src: src}
}

// BindDeployment binds the directory to the deployment's agents: result
// must be an AgentSource (a *deploy.Result is one).
func (d *Directory) BindDeployment(result any) error {
	src, ok := result.(AgentSource)
	if !ok || agent.IsNil(result) {
		return fault.New(fault.Validation, "bind directory", "%T does not list agents", result)
	}
	return d.BindAgents(src)
}

// BindAgents replaces the directory's source.
func (d *Directory) BindAgents(src AgentSource) error {
	if src == nil || agent.IsNil(src) {
		return fault.New(fault.Validation, "bind directory", "agent source must not be nil")
	}
	d.mu.Lock()
	d.src = src
	d.mu.Unlock()
	return nil
}

func (d *Directory) source() (AgentSource, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.src == nil {
		return nil, fault.New(fault.NotAvailable, "delegation directory", "the directory is not bound to a deployment yet")
	}
	return d.src, nil
}

// List returns every agent of the source, sorted by id.
func (d *Directory) List(ctx context.Context) ([]delegation.Target, error) {
	if err := ctxErr(ctx, "list targets"); err != nil {
		return nil, err
	}
	src, err := d.source()
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(slices.Values(src.AgentNames()))
	out := make([]delegation.Target, 0, len(names))
	for _, id := range names {
		if a, ok := src.Agent(id); ok {
			out = append(out, delegation.Target{ID: id, Card: a.Definition.Card})
		}
	}
	return out, nil
}

// Get returns the agent id; an unknown id is NotFound.
func (d *Directory) Get(ctx context.Context, id string) (delegation.Target, error) {
	if err := ctxErr(ctx, "get target"); err != nil {
		return delegation.Target{}, err
	}
	a, ok := d.Agent(id)
	if !ok {
		return delegation.Target{}, fault.New(fault.NotFound, "get target", "agent %q is not a delegation target", id)
	}
	return delegation.Target{ID: id, Card: a.Definition.Card}, nil
}

// Agent returns the bound agent id; false when unknown or unbound.
func (d *Directory) Agent(id string) (*agent.Agent, bool) {
	src, err := d.source()
	if err != nil {
		return nil, false
	}
	return src.Agent(id)
}

// AgentNames lists the source's agent ids; nil when unbound.
func (d *Directory) AgentNames() []string {
	src, err := d.source()
	if err != nil {
		return nil
	}
	return src.AgentNames()
}

// ctxErr refuses a nil or ended ctx.
func ctxErr(ctx context.Context, op string) error {
	if ctx == nil {
		return fault.New(fault.Validation, op, "ctx must not be nil")
	}
	if err := ctx.Err(); err != nil {
		return fault.FromContext(err, op)
	}
	return nil
}
