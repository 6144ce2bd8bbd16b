package delegation

import (
	"context"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
)

// ServiceProvider is the host capability that offers a delegation Service
// to a run.
type ServiceProvider interface {
	DelegationService() Service
}

// ServiceFromHost returns the delegation service a host offers, found with
// agent.CapabilityFromHost. A provider whose service is nil counts as
// absent.
func ServiceFromHost(h agent.Host) (Service, bool) {
	p, ok := agent.CapabilityFromHost[ServiceProvider](h)
	if !ok {
		return nil, false
	}
	svc := p.DelegationService()
	if agent.IsNil(svc) {
		return nil, false
	}
	return svc, true
}

// WithService returns h offering svc as its ServiceProvider. The result
// passes every Host method through to h and unwraps to h, so the
// capabilities of h stay reachable. h must not be nil: WithService panics
// on a nil host, as that is a programming error.
func WithService(h agent.Host, svc Service) agent.Host {
	if agent.IsNil(h) {
		panic("delegation: WithService: host must not be nil")
	}
	return &serviceHost{Host: h, svc: svc}
}

type serviceHost struct {
	agent.Host
	svc Service
}

var (
	_ ServiceProvider     = (*serviceHost)(nil)
	_ agent.HostUnwrapper = (*serviceHost)(nil)
)

func (h *serviceHost) DelegationService() Service { return h.svc }
func (h *serviceHost) UnwrapHost() agent.Host     { return h.Host }

type depthKey struct{}

// ContextWithDepth returns ctx saying that the run it belongs to runs at
// depth n: 0 for a run nobody delegated, 1 for a run a top-level run
// delegated, and so on. Delegate runs its target at one more than the
// depth of its ctx.
func ContextWithDepth(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, depthKey{}, n)
}

type callerKey struct{}

// WithCaller returns ctx naming the agent that delegates: idempotency keys
// are the caller's own (two agents using the same key do not replay, or
// conflict with, each other's delegations). The delegate host function and
// the delegation tools name the run's agent; a caller that names none
// shares the keys of every other such caller.
func WithCaller(ctx context.Context, agentID string) context.Context {
	return context.WithValue(ctx, callerKey{}, agentID)
}

// CallerFromContext returns the agent WithCaller named, or "": a Service
// keeps idempotency keys per caller.
func CallerFromContext(ctx context.Context) string {
	id, _ := ctx.Value(callerKey{}).(string)
	return id
}

type watchedKey struct{}

// WithInterruptsWatched returns ctx saying that whoever delegates with it
// watches the caller's interrupts and ends ctx, with the interrupt as its
// cause (an *agent.InterruptedError), when one comes: the delegate host
// function does. A legacy sub-run started with such a ctx does not read
// the caller's interrupt channel, which stays the caller's; one started
// without it reads the caller's channel as the caller's host hands it.
func WithInterruptsWatched(ctx context.Context) context.Context {
	return context.WithValue(ctx, watchedKey{}, true)
}

// InterruptsWatched reports whether ctx says its caller's interrupts are
// watched (WithInterruptsWatched).
func InterruptsWatched(ctx context.Context) bool {
	ok, _ := ctx.Value(watchedKey{}).(bool)
	return ok
}

// DepthFromContext returns the depth ctx carries, 0 when none.
func DepthFromContext(ctx context.Context) int {
	if ctx == nil {
		return 0
	}
	n, _ := ctx.Value(depthKey{}).(int)
	return n
}

// AtDepth returns svc as a run at depth n sees it: every call runs with
// ContextWithDepth(ctx, n), whatever depth ctx carried. Hosts built for a
// delegated run offer the service this way, as the run's own ctx does not
// carry its depth.
func AtDepth(svc Service, n int) Service {
	if d, ok := svc.(depthService); ok {
		svc = d.svc
	}
	return depthService{svc: svc, depth: n}
}

type depthService struct {
	svc   Service
	depth int
}

var _ Service = depthService{}

func (s depthService) Delegate(ctx context.Context, req Request) (Response, error) {
	if ctx == nil {
		return Response{}, fault.New(fault.Validation, "delegate", "ctx must not be nil")
	}
	return s.svc.Delegate(ContextWithDepth(ctx, s.depth), req)
}

func (s depthService) Get(ctx context.Context, id string) (Response, error) {
	return s.svc.Get(ctx, id)
}
