package main

import (
	"context"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/deploy"
)

// build builds doc with every factory Corral ships; delegation services of
// the document reach the scripts of every turn (builtin.NewBuilder).
func build(ctx context.Context, doc *deploy.Document) (*runtime.Runtime, error) {
	return builtin.NewBuilder().Build(ctx, doc)
}
