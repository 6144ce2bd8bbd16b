// Package builtin assembles every resource factory Corral ships, for
// programs that run deployment documents: the corral command, a service
// that embeds the runtime, a test that builds a whole deployment.
//
//	app, err := builtin.NewBuilder().Build(ctx, doc)
//
// Registry is the registry alone, for a program that sets its own host
// factories on a runtime.Builder.
//
// # Layers
//
// The package sits with the programs (docs/architecture.md): it imports
// the engines and both script runners, so a build that uses it carries
// goja and wazero. No library package imports it; a program that wants to
// leave a runner out registers the factories it needs one by one, as
// Registry does.
package builtin

import (
	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/engine/openai"
	"github.com/corral-rt/corral/engine/scripted"
	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/delegation/hostwrap"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/wasm"
)

// Registry returns a new registry with every factory Corral ships, one
// line per factory:
//
//	event.Bus/memory              event.NewFactory
//	event.Bus/nats                nats.BusFactory
//	checkpoint.Store/jetstream    nats.StoreFactory
//	workspace.Workspace/local     workspace.Factory
//	checkpoint.Store/workspace    checkpoint.Factory
//	sandbox.Runtime/js            js.Factory
//	sandbox.Runtime/wasm          wasm.Factory
//	agent.Engine/graph            graph.Factory
//	model.Provider/openai         openai.Factory
//	model.Provider/scripted       scripted.Factory
//	tool.Assembly/script          tools.Factory
//	delegation.Directory/local,
//	delegation.Service/local,
//	delegation.SessionProvider/random,
//	tool.Assembly/delegation      local.Factories
//
// Each call returns a registry of its own; the caller may register more.
func Registry() *resource.Registry {
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory())
	reg.MustRegister(nats.BusFactory())
	reg.MustRegister(workspace.Factory())
	reg.MustRegister(checkpoint.Factory())
	reg.MustRegister(nats.StoreFactory())
	reg.MustRegister(js.Factory())
	reg.MustRegister(wasm.Factory())
	reg.MustRegister(graph.Factory())
	reg.MustRegister(openai.Factory())
	reg.MustRegister(scripted.Factory())
	reg.MustRegister(tools.Factory())
	reg.MustRegister(local.Factories()...)
	return reg
}

// NewBuilder returns a runtime.Builder over Registry whose turn hosts
// carry the delegation services a document declares to the scripts of
// every turn (hostwrap.Decorate as the result host factory), as the corral
// command builds documents. A program that needs a result host factory of
// its own uses runtime.NewBuilder(Registry()) and calls hostwrap.Decorate
// from its factory.
func NewBuilder() *runtime.Builder {
	b := runtime.NewBuilder(Registry())
	if err := b.WithResultHostFactory(hostwrap.Decorate); err != nil {
		// A new builder has no result host factory yet and
		// hostwrap.Decorate is not nil: this cannot fail.
		panic("builtin: " + err.Error())
	}
	return b
}
