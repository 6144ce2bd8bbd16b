// Command corral runs and checks Corral deployments.
//
//	corral run [DOC] [--agent ID] [--context ID] [--fresh] --message TEXT [--json] [--timeout D]
//	corral validate [DOC]
//
// run builds the deployment document DOC (YAML or JSON), opens a session
// of the agent and runs one turn with the message, streaming the agent's
// output to stdout. While the turn runs, a stdin line that starts with
// /steer is steered to it; any other line answers the question the agent
// asked (shown on stderr), and with no question waiting steers the turn
// when typed on a terminal, or waits for the next question when it comes
// from a pipe. Ctrl-C interrupts the turn; a second Ctrl-C cancels it;
// SIGTERM interrupts and cancels it at once. Either way the outcome is
// printed, with the tokens the turn used. --json prints one JSON object
// {status, run_id, output, state, usage, error} instead. --fresh deletes
// the session's stored history first.
//
// validate parses the document, builds every resource and agent it
// declares with the factories Corral ships, prints what was built, and
// closes it again.
//
// Without DOC both use the embedded demo deployment, which runs offline.
// The exit code is 0 when the command did its job (for run: the turn
// completed), 1 when it did not, and 2 when the document or the command
// line is wrong (document errors name file:line).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/corral-rt/corral/sandbox/js"
)

func main() {
	js.ServeWorkerIfChild() // a worker of isolation: process serves and exits here
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	sio := stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, signals: signals, terminal: isTerminal(os.Stdin)}
	code := run(context.Background(), os.Args[1:], sio)
	signal.Stop(signals)
	os.Exit(code)
}

// isTerminal reports whether f is a character device, such as a terminal.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
