package delegation_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/message"
)

// A service over a directory of agents runs one of them and reports the
// outcome as a Response.
func Example() {
	agents := newAgents()
	agents.put("writer", agenttest.New(agenttest.Say("a short poem")))
	svc, err := delegation.NewLocalService(delegation.ServiceConfig{Directory: delegation.NewLocalDirectory(agents)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer svc.Close()

	resp, err := svc.Delegate(context.Background(), delegation.Request{
		Target: "writer", Input: message.NewTextMessage(message.RoleUser, "write a poem")})
	fmt.Println(resp.Status, err)
	fmt.Println(agenttest.ReplyText(resp.Output))
	// Output:
	// succeeded <nil>
	// a short poem
}

// A host offers a service with WithService; a run finds it with
// ServiceFromHost.
func ExampleServiceFromHost() {
	svc, _ := delegation.NewLocalService(delegation.ServiceConfig{Directory: delegation.NewLocalDirectory(newAgents())})
	defer svc.Close()
	_, ok := delegation.ServiceFromHost(agent.NoopHost{})
	fmt.Println(ok)
	_, ok = delegation.ServiceFromHost(delegation.WithService(agent.NoopHost{}, svc))
	fmt.Println(ok)
	// Output:
	// false
	// true
}
