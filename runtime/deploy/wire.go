package deploy

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
)

// Wire completes a built result: it calls Wire on every resource.Wireable
// value in build order, binds every document agent with BindAgent in id
// order, then calls BindDeployment(r) on every resource.DeploymentBinder
// value in build order. It runs once; a second call is a Conflict error. On
// failure the caller closes r (Deploy does).
func (r *Result) Wire(ctx context.Context) error {
	if ctx == nil {
		return fault.New(fault.Validation, "wire", "context must not be nil")
	}
	r.mu.Lock()
	if r.wired {
		r.mu.Unlock()
		return fault.New(fault.Conflict, "wire", "the deployment is already wired")
	}
	r.wired = true
	r.mu.Unlock()
	for _, name := range r.order {
		v := r.values[name]
		if w, ok := v.(resource.Wireable); ok && !agent.IsNil(v) {
			if err := w.Wire(ctx); err != nil {
				return r.valueError(name, "wire resource", err)
			}
		}
	}
	for _, id := range sortedKeys(r.doc.Agents) {
		if err := ctx.Err(); err != nil {
			return fault.FromContext(err, "wire")
		}
		a, err := BindAgent(ctx, id, r.doc.Agents[id], r, Options{})
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.agents[id] = a
		r.mu.Unlock()
	}
	for _, name := range r.order {
		v := r.values[name]
		if b, ok := v.(resource.DeploymentBinder); ok && !agent.IsNil(v) {
			if err := b.BindDeployment(r); err != nil {
				return r.valueError(name, "bind deployment to resource", err)
			}
		}
	}
	return nil
}

// valueError places err at the resource name, keeping its kind
// (Validation when it has none).
func (r *Result) valueError(name, op string, err error) error {
	kind := fault.KindOf(err)
	if kind == nil {
		kind = fault.Validation
	}
	return r.doc.errorAt(childPath("resources", name), "", fault.Wrap(kind, err, fmt.Sprintf("%s %q", op, name), ""))
}

// Deploy builds and wires doc. When wiring fails it closes the result and
// returns the error.
func Deploy(ctx context.Context, doc *Document, opts Options) (*Result, error) {
	r, err := Build(ctx, doc, opts)
	if err != nil {
		return nil, err
	}
	if err := r.Wire(ctx); err != nil {
		if cerr := r.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return r, nil
}
