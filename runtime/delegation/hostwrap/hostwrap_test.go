package hostwrap_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/delegation/hostwrap"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func result(t *testing.T, resources string) *deploy.Result {
	t.Helper()
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), agenttest.Factory("scripted", agenttest.New(agenttest.Say("hi"))))
	reg.MustRegister(local.Factories()...)
	doc, err := deploy.Parse([]byte(`version: v1
resources:
  events: {kind: event.Bus, impl: memory}
` + resources + `agents:
  writer:
    card: {name: Writer}
    engine: {kind: agent.Engine, impl: scripted}
`))
	require.NoError(t, err)
	r, err := deploy.Deploy(context.Background(), doc, deploy.Options{Registry: reg})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func base(context.Context, session.HostRequest) (agent.Host, error) { return agent.NoopHost{}, nil }

func hostRequest() session.HostRequest {
	return session.HostRequest{Key: session.Key{AgentID: "writer", ContextID: "c"}, RunID: "run-1",
		Interrupts: make(chan agent.Interrupt, 1), AskUser: agent.NoopHost{}.AskUser}
}

// REF 6.2.9: more than one delegation.Service is a Conflict; none
// leaves the factory unchanged; one is offered on every host, at the
// depth the host factory's ctx carries.
func TestWrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	none := result(t, "")
	f, err := hostwrap.Wrap(base, none)
	require.NoError(t, err)
	h, err := f(ctx, hostRequest())
	require.NoError(t, err)
	assert.Equal(t, agent.NoopHost{}, h, "the factory is unchanged")

	_, err = hostwrap.Wrap(base, result(t, `  directory: {kind: delegation.Directory, impl: local}
  a: {kind: delegation.Service, impl: local, deps: {directory: directory}}
  b: {kind: delegation.Service, impl: local, deps: {directory: directory}}
`))
	assert.ErrorIs(t, err, fault.Conflict)
	_, err = hostwrap.Wrap(nil, none)
	assert.ErrorIs(t, err, fault.Validation)
	_, err = hostwrap.Wrap(base, nil)
	assert.ErrorIs(t, err, fault.Validation)

	one := result(t, `  directory: {kind: delegation.Directory, impl: local}
  delegation: {kind: delegation.Service, impl: local, deps: {directory: directory}, settings: {max_depth: 2}}
`)
	f, err = hostwrap.Decorate(one, base)
	require.NoError(t, err)
	req := delegation.Request{Target: "writer", Input: message.NewTextMessage(message.RoleUser, "go")}
	for depth, want := range map[int]error{0: nil, 1: nil, 2: fault.PolicyDenied} {
		h, err := f(delegation.ContextWithDepth(ctx, depth), hostRequest())
		require.NoError(t, err)
		svc, ok := delegation.ServiceFromHost(h)
		require.True(t, ok)
		resp, err := svc.Delegate(ctx, req)
		if want != nil {
			assert.ErrorIs(t, err, want, "a host built at depth %d", depth)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, delegation.StatusSucceeded, resp.Status)
	}
}
