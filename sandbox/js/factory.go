package js

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
)

// Settings are the settings of a "sandbox.Runtime"/"js" resource.
type Settings struct {
	// Limits are the runtime's limits; unset fields take the defaults.
	Limits LimitSettings `json:"limits"`
	// PoolSize is how many calls run at once (0: GOMAXPROCS).
	PoolSize int `json:"pool_size"`
	// ProgramCacheSize is how many compiled scripts are kept (0: 256).
	ProgramCacheSize int `json:"program_cache_size"`
}

// LimitSettings are sandbox.Limits as a document writes them.
type LimitSettings = sandbox.LimitSettings

// Factory returns the factory of kind "sandbox.Runtime", impl "js". It
// has no dependencies; its value is a *Runtime, closed with the resource.
func Factory() resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: sandbox.Kind, Impl: Name}, newFromInput)
}

func newFromInput(ctx context.Context, in resource.Input) (any, error) {
	op := fmt.Sprintf("build script runtime %q", in.Name)
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, op)
	}
	s, err := resource.DecodeTyped[Settings](in.Settings)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	limits, err := s.Limits.Limits()
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	rt, err := New(Options{Limits: limits, PoolSize: s.PoolSize, ProgramCacheSize: s.ProgramCacheSize})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return rt, nil
}
