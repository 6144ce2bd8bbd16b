package main

import (
	"context"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/engine/openai"
	"github.com/corral-rt/corral/engine/scripted"
	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/delegation/hostwrap"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/wasm"
)

// registry returns a registry with every factory Corral ships: one line
// per factory.
func registry() *resource.Registry {
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory())
	reg.MustRegister(workspace.Factory())
	reg.MustRegister(checkpoint.Factory())
	reg.MustRegister(js.Factory())
	reg.MustRegister(wasm.Factory())
	reg.MustRegister(graph.Factory())
	reg.MustRegister(openai.Factory())
	reg.MustRegister(scripted.Factory())
	reg.MustRegister(tools.Factory())
	reg.MustRegister(local.Factories()...)
	return reg
}

// build builds doc with every factory Corral ships; delegation services of
// the document reach the scripts of every turn (hostwrap.Decorate).
func build(ctx context.Context, doc *deploy.Document) (*runtime.Runtime, error) {
	b := runtime.NewBuilder(registry())
	if err := b.WithResultHostFactory(hostwrap.Decorate); err != nil {
		return nil, err
	}
	return b.Build(ctx, doc)
}
