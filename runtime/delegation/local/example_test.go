package local_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/message"
)

// A service over a directory of agents runs one of them and reports the
// outcome as a Response.
func Example() {
	agents := newAgents()
	agents.put("writer", agenttest.New(agenttest.Say("a short poem")))
	svc, err := local.NewService(local.ServiceConfig{Directory: local.NewDirectory(agents)})
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
