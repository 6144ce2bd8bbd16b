package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/wasm"
)

//go:embed default.yaml
var defaultDoc []byte

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1
	exitBadInput = 2
)

const usage = `usage: corral validate [DOC]

  validate   build the deployment DOC (default: the embedded one), print what it holds, close it
`

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitBadInput
		}
		return exitOK
	}
	switch args[0] {
	case "validate":
		return validate(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "corral: unknown command %q\n%s", args[0], usage)
	return exitBadInput
}

// registry returns a registry with every factory Corral ships.
func registry() *resource.Registry {
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), workspace.Factory(), checkpoint.Factory(), js.Factory(), wasm.Factory(), graph.Factory())
	return reg
}

func validate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return exitBadInput
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "corral validate: want at most one document, got %d\n", fs.NArg())
		return exitBadInput
	}
	doc, cleanup, err := loadDocument(fs.Arg(0))
	if err != nil {
		return report(stderr, err)
	}
	defer cleanup()
	app, err := runtime.NewBuilder(registry()).Build(ctx, doc)
	if err != nil {
		return report(stderr, err)
	}
	describe(stdout, doc, app)
	if err := app.Close(); err != nil {
		return report(stderr, err)
	}
	return exitOK
}

// loadDocument parses path, or the embedded default deployment rooted in a
// fresh temporary directory when path is empty.
func loadDocument(path string) (*deploy.Document, func(), error) {
	if path != "" {
		doc, err := deploy.ParseFile(path)
		return doc, func() {}, err
	}
	dir, err := os.MkdirTemp("", "corral-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	doc, err := deploy.Parse(defaultDoc, deploy.WithFilename("default.yaml"), deploy.WithBaseDir(dir))
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return doc, cleanup, nil
}

func describe(w io.Writer, doc *deploy.Document, app *runtime.Runtime) {
	name := doc.File()
	if name == "" {
		name = "document"
	}
	fmt.Fprintf(w, "%s: ok (generation %d)\n", name, app.GenerationID())
	fmt.Fprintln(w, "resources:")
	for _, n := range sortedResourceNames(doc) {
		r := doc.Resources[n]
		fmt.Fprintf(w, "  %-16s %s/%s\n", n, r.Kind, r.Impl)
	}
	if len(doc.Agents) > 0 {
		fmt.Fprintln(w, "agents:")
		for _, id := range sortedAgentNames(doc) {
			a := doc.Agents[id]
			fmt.Fprintf(w, "  %-16s %s (%s/%s)\n", id, a.Card.Name, a.Engine.Kind, a.Engine.Impl)
		}
	}
	cfg := app.Config()
	fmt.Fprintf(w, "runtime: event_bus=%s checkpoint_store=%s resume=%t max_sessions=%d idle_timeout=%s\n",
		cfg.EventBus, orNone(cfg.CheckpointStore), cfg.Sessions.Resume, cfg.Sessions.MaxSessions, cfg.Sessions.IdleTimeout)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// report prints err and returns the exit code for it.
func report(w io.Writer, err error) int {
	fmt.Fprintf(w, "corral: %v\n", err)
	var de *deploy.Error
	switch {
	case errors.As(err, &de), fault.Is(err, fault.Validation), fault.Is(err, fault.NotFound),
		fault.Is(err, fault.Forbidden), fault.Is(err, fault.Conflict), errors.Is(err, os.ErrNotExist):
		return exitBadInput
	}
	return exitFailed
}

func sortedResourceNames(doc *deploy.Document) []string {
	return slices.Sorted(maps.Keys(doc.Resources))
}

func sortedAgentNames(doc *deploy.Document) []string { return slices.Sorted(maps.Keys(doc.Agents)) }
