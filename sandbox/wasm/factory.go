package wasm

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
)

// Settings are the settings of a "sandbox.Runtime"/"wasm" resource.
type Settings struct {
	// Limits are the runtime's limits; unset fields take the defaults.
	Limits LimitSettings `json:"limits"`
	// PoolSize is how many calls run at once (0: GOMAXPROCS).
	PoolSize int `json:"pool_size"`
	// MaxModuleBytes caps a module's size (0: DefaultMaxModuleBytes).
	MaxModuleBytes int64 `json:"max_module_bytes"`
	// MaxModules caps the compiled modules kept (0: DefaultMaxModules).
	MaxModules int `json:"max_modules"`
	// ModuleBounds bound the shape of a module (max_functions, …), at the
	// same level as max_module_bytes; zero fields take the defaults.
	ModuleBounds
	// Engine is "compiler" (the default) or "interpreter".
	Engine string `json:"engine"`
}

// LimitSettings are sandbox.Limits as a document writes them.
type LimitSettings = sandbox.LimitSettings

// Factory returns the factory of kind "sandbox.Runtime", impl "wasm". It
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
	rt, err := New(Options{Limits: limits, PoolSize: s.PoolSize, MaxModuleBytes: s.MaxModuleBytes, MaxModules: s.MaxModules,
		Bounds: s.ModuleBounds, Engine: s.Engine})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return rt, nil
}
