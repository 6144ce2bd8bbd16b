package deploy

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
)

// BindAgent builds the engine and hooks of def against the resources of r
// and returns the bound agent. It is what Wire does for every document
// agent, and what the runtime does for agents registered at run time.
//
// The engine factory is looked up under (engine.kind, engine.impl) and its
// value must implement agent.Engine; each hook under (hook.<slot>, type)
// and its value must implement the slot's interface (agent.Preparer,
// agent.Observer, agent.Referee, agent.Committer). Deps are checked against
// the factory's Spec and resolved from r and the external dependencies;
// resource.Input.Name is id. Zero fields of opts fall back to those r was
// built with.
//
// Every failure is a Validation error (wrapping the cause), and everything
// built before it is closed. BindAgent never changes r's agents.
func BindAgent(ctx context.Context, id string, def agent.Definition, r *Result, opts Options) (a *agent.Agent, err error) {
	switch {
	case ctx == nil:
		return nil, fault.New(fault.Validation, "bind agent", "context must not be nil")
	case r == nil:
		return nil, fault.New(fault.Validation, "bind agent", "result must not be nil")
	case strings.TrimSpace(id) == "":
		return nil, fault.New(fault.Validation, "bind agent", "agent id is empty")
	}
	b := r.agentBinding(id, def, opts)
	path := childPath("agents", id)
	if err := b.doc.validateDefinition(path, def); err != nil {
		return nil, err
	}
	built := &agent.Agent{ID: id, Definition: def}
	defer func() {
		if err != nil {
			_ = built.Close() // the binding error is what the caller needs
		}
	}()
	if err := bindEngine(ctx, b, built); err != nil {
		return nil, err
	}
	for _, slot := range hookSlots() {
		for i, h := range slot.hooks(def) {
			if err := bindHook(ctx, b, built, slot.slot, itemPath(path+"."+slot.field, i), h); err != nil {
				return nil, err
			}
		}
	}
	return built, nil
}

// agentBinding returns the binding for the agent id: opts first, then
// what r was built with. Positions come from r's document when the agent
// is one of its agents.
func (r *Result) agentBinding(id string, def agent.Definition, opts Options) binding {
	b := binding{r: r, doc: r.doc, registry: r.registry, loader: r.loader, external: r.external, kind: fault.Validation}
	if opts.Registry != nil {
		b.registry = opts.Registry
	}
	if opts.Loader != nil {
		b.loader = opts.Loader
	}
	if opts.External != nil {
		b.external = opts.External
	}
	if _, ok := r.doc.Agents[id]; !ok {
		b.doc = &Document{} // not written in the document: no position
	}
	b.op = fmt.Sprintf("bind agent %q", id)
	return b
}

func bindEngine(ctx context.Context, b binding, a *agent.Agent) error {
	e := a.Definition.Engine
	if e.IsZero() {
		return nil
	}
	b.path = childPath("agents", a.ID) + ".engine"
	b.op += ": engine"
	v, err := b.build(ctx, a, e.Kind, e.Impl, e.Deps, e.Settings)
	if err != nil {
		return err
	}
	eng, ok := v.(agent.Engine)
	if !ok || agent.IsNil(v) {
		return b.fail(b.path, "", "%T is not an agent.Engine", v)
	}
	a.Engine = eng
	return nil
}

func bindHook(ctx context.Context, b binding, a *agent.Agent, slot, path string, h agent.HookRef) error {
	b.path = path
	b.op += fmt.Sprintf(": %s hook %q", slot, h.Type)
	v, err := b.build(ctx, a, "hook."+slot, h.Type, h.Deps, h.Settings)
	if err != nil {
		return err
	}
	var ok bool
	var want string
	switch slot {
	case agent.SlotPrepare:
		ok, want = appendAs(v, &a.Preparers), "agent.Preparer"
	case agent.SlotObserve:
		ok, want = appendAs(v, &a.Observers), "agent.Observer"
	case agent.SlotReferee:
		ok, want = appendAs(v, &a.Referees), "agent.Referee"
	case agent.SlotCommit:
		ok, want = appendAs(v, &a.Committers), "agent.Committer"
	}
	if !ok || agent.IsNil(v) {
		return b.fail(b.path, "", "%T is not an %s", v, want)
	}
	return nil
}

// build looks up the factory, resolves deps and settings and calls New.
// A value that is an io.Closer joins a's closers at once, so that a later
// failure closes it.
func (b binding) build(ctx context.Context, a *agent.Agent, kind, impl string, deps map[string]string, raw []byte) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, b.wrap(b.path, "", fault.FromContext(err, "bind agent"))
	}
	at := b.path + ".kind"
	if strings.HasPrefix(kind, "hook.") {
		at = b.path + ".type"
	}
	f, err := b.lookup(kind, impl, at)
	if err != nil {
		return nil, err
	}
	resolved, err := b.deps(f.Spec(), deps, b.path+".deps")
	if err != nil {
		return nil, err
	}
	settings, ref, err := b.settings(ctx, raw, b.path+".settings")
	if err != nil {
		return nil, err
	}
	v, err := f.New(ctx, resource.Input{Name: a.ID, Settings: settings, Deps: resolved, Loader: b.loader})
	if err != nil {
		return nil, b.wrapSettings(b.path, ref, err)
	}
	if c, ok := v.(io.Closer); ok && !agent.IsNil(v) {
		a.Closers = append(a.Closers, c)
	}
	return v, nil
}

// appendAs appends v to *dst when it is a T and reports whether it was.
func appendAs[T any](v any, dst *[]T) bool {
	t, ok := v.(T)
	if ok {
		*dst = append(*dst, t)
	}
	return ok
}
