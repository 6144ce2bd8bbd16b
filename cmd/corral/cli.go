package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/corral-rt/corral/cmd/corral/internal/demo"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
)

// Exit codes.
const (
	exitOK       = 0 // the command did what it was asked; for run: the turn completed
	exitFailed   = 1 // it did not: the turn was interrupted, canceled or failed
	exitBadInput = 2 // the command line or the document is wrong
)

const usage = `usage:
  corral run [DOC] [--agent ID] [--context ID] [--fresh] --message TEXT [--json] [--timeout D] [--record FILE]
  corral validate [DOC]
  corral replay [--json] [--set N=VALUE --out FILE] FILE [DOC]
  corral replay [--json] --fleet DOC FILE...
  corral serve [DOC] [--addr 127.0.0.1:8080] [--keys FILE] [--drain D] [--grace D] [--log-json]
               [--metrics-addr ADDR] [--record-turns N]
  corral version

  run        run one turn of an agent of the deployment DOC, streaming its output;
             a stdin line answers the agent's question, "/steer TEXT" steers the turn
             (a line typed on a terminal with no question waiting steers too);
             Ctrl-C interrupts the turn, a second Ctrl-C cancels it, SIGTERM both
  validate   build the deployment DOC, print what it holds, close it
  replay     re-run a recorded turn (corral run --record FILE) offline against its
             documents or DOC, and report whether it ran identically (docs/replay.md)
  serve      serve the deployment DOC over HTTP to the tenants of a keys file:
             an OpenAI-compatible API, the native session API and a web console
             at / (docs/serve.md); SIGTERM or Ctrl-C drains
  version    print the version of corral

Without DOC run, validate and serve use the embedded demo deployment (cmd/corral/internal/demo).
Exit codes: 0 done (for run: the turn completed), 1 not done, 2 bad input.
`

// stdio is what a command reads and writes: the process's standard streams
// and its interrupt signals.
type stdio struct {
	in      io.Reader
	out     io.Writer
	err     io.Writer
	signals <-chan os.Signal // nil: no signals
	// terminal says in is a terminal: a person reads the questions and
	// types the lines, and the terminal echoes them. Otherwise (a pipe, a
	// file: the zero value) answers are shown after their question, and
	// lines wait for the questions (driver.onLine).
	terminal bool
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, sio stdio) int {
	if len(args) == 0 {
		fmt.Fprint(sio.err, usage)
		return exitBadInput
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(sio.out, usage)
		return exitOK
	case "version", "--version", "-version":
		fmt.Fprintln(sio.out, "corral", version())
		return exitOK
	case "run":
		return runCommand(ctx, args[1:], sio)
	case "replay":
		return replayCommand(ctx, args[1:], sio)
	case "serve":
		return serveCommand(ctx, args[1:], sio)
	case "validate":
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer cancelOnSignal(sio.signals, cancel)()
		return validate(ctx, args[1:], sio.out, sio.err)
	}
	fmt.Fprintf(sio.err, "corral: unknown command %q\n%s", args[0], usage)
	return exitBadInput
}

// version is the module's version as the build recorded it, with the
// commit for a build from a checkout.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 && (v == "" || v == "(devel)") {
			v = "(devel) " + s.Value[:12]
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return v
}

// loadDocument parses path, or the embedded demo deployment extracted into
// a fresh temporary directory when path is empty. cleanup removes what
// loadDocument made; it is never nil.
func loadDocument(path string) (doc *deploy.Document, cleanup func(), err error) {
	if path != "" {
		doc, err := deploy.ParseFile(path)
		return doc, func() {}, err
	}
	dir, err := os.MkdirTemp("", "corral-demo-")
	if err != nil {
		return nil, func() {}, fault.Wrap(fault.Internal, err, "load demo", "")
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	file, err := demo.Extract(dir)
	if err == nil {
		doc, err = deploy.ParseFileWithConfig(file, deploy.ParseConfig{Filename: "demo/" + demo.Document})
	}
	if err != nil {
		cleanup()
		return nil, func() {}, err
	}
	return doc, cleanup, nil
}

// report prints err and returns the exit code for it.
func report(w io.Writer, err error) int {
	fmt.Fprintf(w, "corral: %v\n", err)
	return exitCodeOf(err)
}

// exitCodeOf is exitBadInput for an error of the document or the command
// line, exitFailed for any other.
func exitCodeOf(err error) int {
	var de *deploy.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return exitFailed
	case errors.As(err, &de), fault.Is(err, fault.Validation), fault.Is(err, fault.NotFound),
		fault.Is(err, fault.Forbidden), fault.Is(err, fault.Conflict), errors.Is(err, os.ErrNotExist):
		return exitBadInput
	}
	return exitFailed
}
