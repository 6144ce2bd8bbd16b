package delegation_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
)

// done is a Service that finishes every delegation at once, with no
// output.
type done struct{}

func (done) Delegate(_ context.Context, req delegation.Request) (delegation.Response, error) {
	return delegation.Response{ID: "dlg-1", Target: req.Target, Status: delegation.StatusSucceeded}, nil
}

func (done) Get(_ context.Context, id string) (delegation.Response, error) {
	return delegation.Response{}, fault.New(fault.NotFound, "get delegation", "no delegation %q", id)
}

// A host offers a service with WithService; a run finds it with
// ServiceFromHost.
func ExampleServiceFromHost() {
	_, ok := delegation.ServiceFromHost(agent.NoopHost{})
	fmt.Println(ok)
	svc, ok := delegation.ServiceFromHost(delegation.WithService(agent.NoopHost{}, done{}))
	fmt.Println(ok)
	resp, _ := svc.Delegate(context.Background(), delegation.Request{Target: "writer"})
	fmt.Println(resp.Status)
	// Output:
	// false
	// true
	// succeeded
}
