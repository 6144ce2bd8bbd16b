package hostwrap_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/delegation/hostwrap"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
)

// Every host the wrapped factory builds offers the deployment's
// delegation service.
func ExampleWrap() {
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), agenttest.Factory("scripted", agenttest.New(agenttest.Say("hello"))))
	reg.MustRegister(local.Factories()...)
	doc, err := deploy.Parse([]byte(`version: v1
resources:
  directory: {kind: delegation.Directory, impl: local}
  delegation: {kind: delegation.Service, impl: local, deps: {directory: directory}}
agents:
  greeter:
    card: {name: Greeter}
    engine: {kind: agent.Engine, impl: scripted}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	result, err := deploy.Deploy(context.Background(), doc, deploy.Options{Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer result.Close()
	base := func(context.Context, session.HostRequest) (agent.Host, error) { return agent.NoopHost{}, nil }
	factory, _ := hostwrap.Wrap(base, result)
	host, _ := factory(context.Background(), session.HostRequest{})
	svc, ok := delegation.ServiceFromHost(host)
	fmt.Println(ok)
	resp, _ := svc.Delegate(context.Background(), delegation.Request{Target: "greeter"})
	fmt.Println(resp.Status, agenttest.ReplyText(resp.Output))
	// Output:
	// true
	// succeeded hello
}
