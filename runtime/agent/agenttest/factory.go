package agenttest

import (
	"context"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
)

// EngineKind is the resource kind of agent engines.
const EngineKind = "agent.Engine"

// Factory returns a resource factory of kind agent.Engine and impl name
// whose New returns e itself, so a deployment document can run e:
//
//	engine: {kind: agent.Engine, impl: scripted}
//
// The factory takes no deps and no settings (any settings key is a
// Validation error). A nil e makes New fail with Validation.
func Factory(name string, e *Engine) resource.Factory {
	spec := resource.Spec{Kind: EngineKind, Impl: name}
	return resource.FactoryFunc(spec, func(_ context.Context, in resource.Input) (any, error) {
		if e == nil {
			return nil, fault.New(fault.Validation, "agenttest", "%s: no engine", spec.Key())
		}
		var settings struct{}
		if err := resource.DecodeSettings(in.Settings, &settings); err != nil {
			return nil, err
		}
		return e, nil
	})
}
