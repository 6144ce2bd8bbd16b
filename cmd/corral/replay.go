package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/deploy"
)

// replayOptions is the command line of corral replay.
type replayOptions struct {
	json  bool
	set   string // N=VALUE: fork
	out   string // where the fork is written
	fleet string // the document every file replays against
	files []string
	doc   string
}

// newReplayBuilder builds the runtime a replay runs on; tests replace it.
var newReplayBuilder = builtin.NewBuilder

func parseReplayFlags(args []string, usage io.Writer) (replayOptions, error) {
	var o replayOptions
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&o.json, "json", false, "print one JSON object per recording instead of text")
	fs.StringVar(&o.set, "set", "", "fork: replace input `N=VALUE` (JSON, or text for a string) and write the new recording to --out")
	fs.StringVar(&o.out, "out", "", "the `FILE` a fork is written to")
	fs.StringVar(&o.fleet, "fleet", "", "replay every FILE against the deployment `DOC`, one line per recording")
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				fs.SetOutput(usage)
				fmt.Fprintln(usage, "usage: corral replay [flags] FILE [DOC]\n       corral replay [flags] --fleet DOC FILE...")
				fs.PrintDefaults()
				return o, err
			}
			return o, fault.Wrap(fault.Validation, err, "replay", "")
		}
		args = fs.Args()
		if len(args) > 0 {
			rest, args = append(rest, args[0]), args[1:]
		}
	}
	switch {
	case o.fleet != "":
		if len(rest) == 0 {
			return o, fault.New(fault.Validation, "replay", "--fleet needs at least one recording")
		}
		if o.set != "" {
			return o, fault.New(fault.Validation, "replay", "--set forks one recording, not a fleet")
		}
		o.files, o.doc = rest, o.fleet
	case len(rest) == 0 || len(rest) > 2:
		return o, fault.New(fault.Validation, "replay", "want FILE [DOC], got %q", rest)
	default:
		o.files = rest[:1]
		if len(rest) == 2 {
			o.doc = rest[1]
		}
	}
	if (o.set == "") != (o.out == "") {
		return o, fault.New(fault.Validation, "replay", "--set and --out go together")
	}
	return o, nil
}

// replayResult is what corral replay prints for one recording.
type replayResult struct {
	File       string             `json:"file"`
	RunID      string             `json:"run_id,omitempty"`
	Status     string             `json:"status"` // identical, diverged, failed
	Divergence *replay.Divergence `json:"divergence,omitempty"`
	Changed    []string           `json:"changed,omitempty"`
	Fork       string             `json:"fork,omitempty"` // the recording a fork was written to
	Error      string             `json:"error,omitempty"`
}

// replayCommand is corral replay: exit 0 when every recording replayed
// identically, 1 when one diverged, 2 for bad input.
func replayCommand(ctx context.Context, args []string, sio stdio) int {
	o, err := parseReplayFlags(args, sio.out)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return report(sio.err, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer cancelOnSignal(sio.signals, cancel)()
	code := exitOK
	for _, file := range o.files {
		res, c := replayOne(ctx, o, file)
		code = max(code, c)
		printReplay(sio, o, res)
	}
	return code
}

// replayOne replays one recording and returns its result and exit code.
func replayOne(ctx context.Context, o replayOptions, file string) (replayResult, int) {
	res := replayResult{File: file, Status: "failed"}
	fail := func(err error) (replayResult, int) {
		res.Error = err.Error()
		return res, exitBadInput
	}
	if o.out != "" {
		if err := refuseSameFile(o.out, file); err != nil {
			return fail(err)
		}
	}
	rec, err := replay.DecodeFile(file)
	if err != nil {
		return fail(err)
	}
	res.RunID = rec.Header.RunID
	path := o.doc
	if path == "" && rec.Header.Document != "" {
		if path, err = replay.DocumentPath(file, rec.Header.Document); err != nil {
			return fail(err)
		}
	}
	doc, cleanup, err := loadDocument(path)
	if err != nil {
		return fail(err)
	}
	defer cleanup()
	if digests, err := replayDigests(path, doc); err == nil {
		res.Changed = replay.ChangedFiles(rec.Header.Digests, digests)
	}
	cfg := replay.Config{Document: doc, NewBuilder: func() *runtime.Builder { return newReplayBuilder() }}
	var rep *replay.Report
	if o.set != "" {
		n, v, err := replay.ParseSet(o.set)
		if err != nil {
			return fail(err)
		}
		var child *replay.Recording
		if child, rep, err = replay.Fork(ctx, rec, n, v, cfg); err != nil {
			return fail(err)
		}
		child.Header.Document = relativeTo(o.out, path) // the child names the document from where it lies
		if err := writeRecordingFile(o.out, child); err != nil {
			return fail(err)
		}
		// A fork's transcript differs from its parent's by design: it
		// fails only when the run asked for an input the recording lacks.
		if d := rep.Divergence; d == nil || d.What != "input" {
			res.Status, res.Fork = "forked", o.out
			return res, exitOK
		}
	} else if rep, err = replay.Replay(ctx, rec, cfg); err != nil {
		return fail(err)
	}
	if rep.Identical {
		res.Status = "identical"
		return res, exitOK
	}
	res.Status, res.Divergence = "diverged", rep.Divergence
	return res, exitFailed
}

// refuseSameFile refuses a fork's --out that names the recording being
// forked (or a link to it): the child would replace its parent, whose
// digest it names.
func refuseSameFile(out, input string) error {
	a, err1 := os.Stat(out)
	b, err2 := os.Stat(input)
	if err1 == nil && err2 == nil && os.SameFile(a, b) {
		return fault.New(fault.Validation, "replay", "--out %s is the recording being forked: write the fork to another file", out)
	}
	return nil
}

// replayDigests digests the files of the document replayed.
func replayDigests(path string, doc *deploy.Document) ([]replay.Digest, error) {
	file := path
	if file == "" {
		file = doc.BaseDir() + string(os.PathSeparator) + "deploy.yaml"
	}
	return replay.Digests(file)
}

func printReplay(sio stdio, o replayOptions, r replayResult) {
	if o.json {
		b, _ := json.Marshal(r)
		fmt.Fprintln(sio.out, string(b))
		return
	}
	var b strings.Builder
	// Text from a recording (node names, paths, error messages quoting it)
	// is escaped: it cannot rewrite the terminal or log it is printed to.
	fmt.Fprintf(&b, "%s\t%s", replay.Printable(r.File), r.Status)
	switch {
	case r.Divergence != nil:
		fmt.Fprintf(&b, " at %s", r.Divergence)
	case r.Error != "":
		fmt.Fprintf(&b, ": %s", replay.Printable(r.Error))
	case r.Fork != "":
		fmt.Fprintf(&b, " into %s", replay.Printable(r.Fork))
	}
	if len(r.Changed) > 0 {
		fmt.Fprintf(&b, "\t(changed: %s)", replay.Printable(strings.Join(r.Changed, ", ")))
	}
	fmt.Fprintln(sio.out, b.String())
	if d := r.Divergence; d != nil {
		for _, line := range d.Diff {
			fmt.Fprintln(sio.out, "  "+replay.Printable(line))
		}
	}
}
