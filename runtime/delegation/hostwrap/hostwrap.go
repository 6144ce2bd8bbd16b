package hostwrap

import (
	"context"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/session"
)

// Wrap returns factory with the deployment's delegation service on each
// host it builds (REF 6.2.9). The service is offered at the depth
// the host factory's ctx carries (delegation.DepthFromContext): 0 for a
// turn a user started, the delegated depth for a turn the service started.
func Wrap(factory session.HostFactory, result *deploy.Result) (session.HostFactory, error) {
	switch {
	case factory == nil:
		return nil, fault.New(fault.Validation, "hostwrap", "host factory must not be nil")
	case result == nil:
		return nil, fault.New(fault.Validation, "hostwrap", "deployment result must not be nil")
	}
	var svc delegation.Service
	var name string
	for _, n := range result.Order() {
		v, _ := result.Value(n)
		s, ok := v.(delegation.Service)
		if !ok || agent.IsNil(v) {
			continue
		}
		if svc != nil {
			return nil, fault.New(fault.Conflict, "hostwrap",
				"resources %q and %q are both delegation services; at most one may be", name, n)
		}
		svc, name = s, n
	}
	if svc == nil {
		return factory, nil
	}
	return func(ctx context.Context, req session.HostRequest) (agent.Host, error) {
		h, err := factory(ctx, req)
		if err != nil || h == nil || agent.IsNil(h) {
			return h, err
		}
		return delegation.WithService(h, delegation.AtDepth(svc, delegation.DepthFromContext(ctx))), nil
	}, nil
}

// Decorate is Wrap with its arguments in the order of
// runtime.ResultHostDecorator, so that it can be passed to
// runtime.Builder.WithResultHostFactory as it is.
func Decorate(result *deploy.Result, factory session.HostFactory) (session.HostFactory, error) {
	return Wrap(factory, result)
}
