package wasm

import (
	"context"
	"fmt"
	"time"

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
	// Engine is "compiler" (the default) or "interpreter".
	Engine string `json:"engine"`
}

// LimitSettings are sandbox.Limits as a document writes them: times are Go
// durations ("5s", "250ms").
type LimitSettings struct {
	WallTime      string `json:"wall_time"`
	RunTime       string `json:"run_time"`
	MemoryBytes   int64  `json:"memory_bytes"`
	StackDepth    int    `json:"stack_depth"`
	MaxValueBytes int64  `json:"max_value_bytes"`
	MaxEvents     int    `json:"max_events"`
	MaxEventBytes int64  `json:"max_event_bytes"`
	MaxLogBytes   int64  `json:"max_log_bytes"`
	MaxBoardBytes int64  `json:"max_board_bytes"`
}

// Limits converts the settings; a malformed or negative duration is a
// Validation error.
func (s LimitSettings) Limits() (sandbox.Limits, error) {
	dur := func(name, v string) (time.Duration, error) {
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fault.Wrap(fault.Validation, err, "limits", "%s: want a duration like \"5s\"", name)
		}
		return d, nil
	}
	wall, err := dur("wall_time", s.WallTime)
	if err != nil {
		return sandbox.Limits{}, err
	}
	run, err := dur("run_time", s.RunTime)
	if err != nil {
		return sandbox.Limits{}, err
	}
	l := sandbox.Limits{
		WallTime: wall, RunTime: run, MemoryBytes: s.MemoryBytes, StackDepth: s.StackDepth,
		MaxValueBytes: s.MaxValueBytes, MaxEvents: s.MaxEvents, MaxEventBytes: s.MaxEventBytes, MaxLogBytes: s.MaxLogBytes,
		MaxBoardBytes: s.MaxBoardBytes,
	}
	return l, l.Validate()
}

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
	rt, err := New(Options{Limits: limits, PoolSize: s.PoolSize, MaxModuleBytes: s.MaxModuleBytes, MaxModules: s.MaxModules, Engine: s.Engine})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return rt, nil
}
