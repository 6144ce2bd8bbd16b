package event

import (
	"context"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
)

// The factory's kind and implementation.
const (
	KindBus    = "event.Bus"
	ImplMemory = "memory"
)

// MemorySettings are the settings of an event.Bus/memory resource.
type MemorySettings struct {
	// RouteCacheSize caps the route cache: positive is the cap, 0 turns it
	// off. Unset means 1024.
	RouteCacheSize *int `json:"route_cache_size,omitempty"`
	// BufferSize is the buffer of subscriptions that do not set one, from
	// 1 to 1<<20. Unset means 64.
	BufferSize *int `json:"buffer_size,omitempty"`
}

// Validate checks the settings' ranges.
func (s MemorySettings) Validate() error {
	if s.RouteCacheSize != nil && *s.RouteCacheSize < 0 {
		return fault.New(fault.Validation, "event bus settings", "route_cache_size %d must not be negative", *s.RouteCacheSize)
	}
	if s.BufferSize != nil && (*s.BufferSize < 1 || *s.BufferSize > MaxBufferSize) {
		return fault.New(fault.Validation, "event bus settings", "buffer_size %d is outside 1..%d", *s.BufferSize, MaxBufferSize)
	}
	return nil
}

// BusConfig returns the bus configuration the settings stand for.
func (s MemorySettings) BusConfig() BusConfig {
	var cfg BusConfig
	if s.RouteCacheSize != nil {
		cfg.RouteCacheSize = *s.RouteCacheSize
		if cfg.RouteCacheSize == 0 {
			cfg.RouteCacheSize = -1 // the document's 0 turns the cache off
		}
	}
	if s.BufferSize != nil {
		cfg.DefaultBufferSize = *s.BufferSize
	}
	return cfg
}

// NewFactory returns the factory of event.Bus/memory resources. Settings
// (decoded strictly; unknown keys are errors):
//
//	route_cache_size: 1024   # positive = cap, 0 = off
//	buffer_size: 64          # default subscription buffer, 1..1048576
//
// The value is a *MemoryBus; the deployment closes it.
func NewFactory() resource.Factory {
	spec := resource.Spec{Kind: KindBus, Impl: ImplMemory}
	return resource.FactoryFunc(spec, newMemoryResource)
}

func newMemoryResource(_ context.Context, in resource.Input) (any, error) {
	var s MemorySettings
	if err := resource.DecodeSettings(in.Settings, &s); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "build "+KindBus+"/"+ImplMemory, "resource %q", in.Name)
	}
	if err := s.Validate(); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "build "+KindBus+"/"+ImplMemory, "resource %q", in.Name)
	}
	return NewMemoryBusWithConfig(s.BusConfig()), nil
}
