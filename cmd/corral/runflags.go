package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
)

// defaultContext is the context id of a turn when --context is not given.
const defaultContext = "cli"

// runOptions is the command line of corral run.
type runOptions struct {
	doc       string        // the deployment document; "" is the embedded demo
	agent     string        // the agent; "" picks the document's only agent
	contextID string        // the session's context id
	message   string        // the user message the turn starts with
	json      bool          // print one JSON object instead of the stream
	fresh     bool          // delete the session's stored state before the turn
	timeout   time.Duration // 0: none
	record    string        // write the turn's recording here; "": none
	recorder  *recording    // set up by runCommand when record is set
}

// parseRunFlags parses the arguments of corral run. DOC may come before or
// after the flags. Problems are Validation errors; -h gives flag.ErrHelp.
// Flag usage goes to usage.
func parseRunFlags(args []string, usage io.Writer) (runOptions, error) {
	var o runOptions
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.agent, "agent", "", "the agent `ID` to run (default: the document's only agent)")
	fs.StringVar(&o.contextID, "context", defaultContext, "the context `ID` of the session")
	fs.StringVar(&o.message, "message", "", "the user message the turn starts with (required)")
	fs.BoolVar(&o.json, "json", false, "print one JSON object {status, run_id, output, state, usage, error} instead of the stream")
	fs.BoolVar(&o.fresh, "fresh", false, "start the session afresh: delete its stored history and state first")
	fs.StringVar(&o.record, "record", "", "write the turn's recording to `FILE` (docs/replay.md) for corral replay")
	fs.DurationVar(&o.timeout, "timeout", 0, "cancel the turn after `D` (a Go duration: 30s, 2m); 0 means none")
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		o.doc, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(usage)
			fmt.Fprintln(usage, "usage: corral run [DOC] [flags]")
			fs.PrintDefaults()
			return o, err
		}
		return o, fault.Wrap(fault.Validation, err, "run", "")
	}
	switch rest := fs.Args(); {
	case len(rest) == 1 && o.doc == "":
		o.doc = rest[0]
	case len(rest) > 0:
		return o, fault.New(fault.Validation, "run", "want at most one document, got %q", append(nonEmpty(o.doc), rest...))
	}
	switch {
	case o.message == "":
		return o, fault.New(fault.Validation, "run", "--message is required")
	case strings.TrimSpace(o.contextID) == "":
		return o, fault.New(fault.Validation, "run", "--context must not be blank")
	case o.timeout < 0:
		return o, fault.New(fault.Validation, "run", "--timeout must not be negative, got %s", o.timeout)
	}
	return o, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// pickAgent returns the agent the turn runs: want when the document has
// it, the document's only agent when want is empty. Problems are NotFound
// or Validation errors naming the agents the document has.
func pickAgent(doc *deploy.Document, want string) (string, error) {
	ids := slices.Sorted(maps.Keys(doc.Agents))
	switch {
	case want != "":
		if _, ok := doc.Agents[want]; ok {
			return want, nil
		}
		return "", fault.New(fault.NotFound, "run", "agent %q is not in %s (agents: %s)", want, docName(doc), listOrNone(ids))
	case len(ids) == 1:
		return ids[0], nil
	case len(ids) == 0:
		return "", fault.New(fault.Validation, "run", "%s declares no agent", docName(doc))
	}
	return "", fault.New(fault.Validation, "run", "--agent is required: %s declares %s", docName(doc), listOrNone(ids))
}

func docName(doc *deploy.Document) string {
	if doc.File() == "" {
		return "the document"
	}
	return doc.File()
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}
