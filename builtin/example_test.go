package builtin_test

import (
	"fmt"

	"github.com/corral-rt/corral/builtin"
)

// Registry holds every factory Corral ships: a document may use any of
// these kinds and impls.
func ExampleRegistry() {
	for _, s := range builtin.Registry().Specs() {
		fmt.Println(s.Kind + "/" + s.Impl)
	}
	// Output:
	// agent.Engine/graph
	// checkpoint.Store/jetstream
	// checkpoint.Store/workspace
	// delegation.Directory/local
	// delegation.Service/local
	// delegation.SessionProvider/random
	// event.Bus/memory
	// event.Bus/nats
	// model.Provider/openai
	// model.Provider/scripted
	// sandbox.Runtime/js
	// sandbox.Runtime/wasm
	// tool.Assembly/delegation
	// tool.Assembly/script
	// workspace.Workspace/local
}
