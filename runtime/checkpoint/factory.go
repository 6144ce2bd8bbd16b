package checkpoint

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/workspace"
)

// Kind and Impl name what Factory builds; WorkspaceDep is its dependency
// role.
const (
	Kind         = "checkpoint.Store"
	Impl         = "workspace"
	WorkspaceDep = "workspace"
)

// Settings are the settings of a "checkpoint.Store"/"workspace" resource.
type Settings struct {
	// Prefix is the directory of the records in the workspace; leading and
	// trailing '/' are trimmed and empty means DefaultPrefix.
	Prefix string `json:"prefix,omitempty"`
	// Sync says when saves are flushed to the disk: "wave" (the default),
	// "turn" or "none" (Sync).
	Sync string `json:"sync,omitempty"`
}

// Factory returns the factory of kind "checkpoint.Store", impl "workspace".
// It takes one required dependency, "workspace", of type
// "workspace.Workspace"; its value is a *Store.
func Factory() resource.Factory {
	spec := resource.Spec{
		Kind: Kind,
		Impl: Impl,
		Deps: []resource.DepSpec{{Name: WorkspaceDep, Type: workspace.Kind, Required: true}},
	}
	return resource.FactoryFunc(spec, newFromInput)
}

func newFromInput(ctx context.Context, in resource.Input) (any, error) {
	op := fmt.Sprintf("build checkpoint store %q", in.Name)
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, op)
	}
	s, err := resource.DecodeTyped[Settings](in.Settings)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	v, ok := in.Dep(WorkspaceDep)
	if !ok || v == nil {
		return nil, fault.New(fault.Validation, op, "dep %q is required", WorkspaceDep)
	}
	ws, err := resource.As[workspace.Workspace](WorkspaceDep, v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	st, err := NewStoreWithConfig(ws, Config{Prefix: s.Prefix, Sync: Sync(s.Sync)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return st, nil
}
