package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/deploy"
)

// validate builds the document as run would, which reads every file it
// references and compiles every script (sandbox.CheckScript), and runs
// nothing: a document error, a file that is not a regular file or is over
// its cap, and a script that does not compile are bad input (exit 2),
// reported at their file and line.
func validate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, "usage: corral validate [DOC]\n\nBuild the deployment DOC (default: the embedded demo) without running anything, print what it holds and close it.\nBuilding reads every referenced file and compiles every node script and tool (a WebAssembly module when its runtime can check it).\n")
			return exitOK
		}
		fmt.Fprintf(stderr, "corral: validate: %v\n", err)
		return exitBadInput
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "corral: validate: want at most one document, got %d\n", fs.NArg())
		return exitBadInput
	}
	doc, cleanup, err := loadDocument(fs.Arg(0))
	if err != nil {
		return report(stderr, err)
	}
	defer cleanup()
	app, err := build(ctx, doc)
	if err != nil {
		return report(stderr, err)
	}
	describe(stdout, doc, app)
	if err := app.Close(); err != nil {
		return report(stderr, err)
	}
	return exitOK
}

func describe(w io.Writer, doc *deploy.Document, app *runtime.Runtime) {
	name := doc.File()
	if name == "" {
		name = "document"
	}
	fmt.Fprintf(w, "%s: ok (generation %d)\n", name, app.GenerationID())
	fmt.Fprintln(w, "resources:")
	for _, n := range slices.Sorted(maps.Keys(doc.Resources)) {
		r := doc.Resources[n]
		fmt.Fprintf(w, "  %-16s %s/%s\n", n, r.Kind, r.Impl)
	}
	if len(doc.Agents) > 0 {
		fmt.Fprintln(w, "agents:")
		for _, id := range slices.Sorted(maps.Keys(doc.Agents)) {
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
