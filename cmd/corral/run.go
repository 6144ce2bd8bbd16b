package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// runCommand is corral run: it builds the runtime, runs one turn and
// prints its outcome.
func runCommand(ctx context.Context, args []string, sio stdio) int {
	opts, err := parseRunFlags(args, sio.out)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return report(sio.err, err)
	}
	// Read stdin from the start: a line typed while the runtime builds
	// steers the turn as soon as it starts.
	lines := startLines(sio.in)
	defer lines.Stop()
	if opts.record != "" {
		opts.recorder = &recording{file: opts.record}
	}
	s, closeAll, err := openSession(ctx, opts, sio)
	if err != nil {
		return report(sio.err, err)
	}
	defer closeAll()
	con := &console{out: sio.out, errw: sio.err, quiet: opts.json, echo: !sio.terminal}
	o, err := runTurn(ctx, s, opts, con, lines, sio)
	if err != nil {
		return report(sio.err, err)
	}
	return printOutcome(con, sio, opts, o)
}

// openSession builds the deployment of opts and opens the session of the
// turn; an interrupt signal meanwhile abandons it. closeAll closes the
// session and the runtime and removes what loading the document made.
func openSession(ctx context.Context, opts runOptions, sio stdio) (_ *session.Session, closeAll func(), err error) {
	var closers []func()
	closeInOrder := func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}
	setupCtx, cancel := context.WithCancel(ctx)
	closers = append(closers, cancel)
	defer func() {
		if err != nil && setupCtx.Err() != nil {
			err = fault.Wrap(fault.Aborted, setupCtx.Err(), "run", "abandoned before the turn started")
		}
		if err != nil {
			closeInOrder()
		}
	}()
	unwatch := cancelOnSignal(sio.signals, cancel)
	closers = append(closers, unwatch)
	doc, cleanup, err := loadDocument(opts.doc)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, cleanup)
	rec, err := opts.recorder.start(opts.doc, doc)
	if err != nil {
		return nil, nil, err
	}
	app, err := buildRecording(setupCtx, doc, rec)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { closeQuietly(sio, "close the runtime", app.Close) })
	agentID, err := pickAgent(doc, opts.agent)
	if err != nil {
		return nil, nil, err
	}
	key := session.Key{AgentID: agentID, ContextID: opts.contextID}
	if opts.fresh {
		if err := app.Sessions().DeleteSession(setupCtx, key); err != nil {
			return nil, nil, fault.Wrap(fault.KindOr(err, fault.Internal), err, "run", "--fresh: delete session %q", opts.contextID)
		}
	}
	lease, err := app.Sessions().Open(setupCtx, key)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { closeQuietly(sio, "close the session", lease.Close) })
	if unwatch(); setupCtx.Err() != nil {
		return nil, nil, setupCtx.Err()
	}
	return lease.Session(), closeInOrder, nil
}

// cancelOnSignal calls cancel when a signal arrives, until the returned
// unwatch is called; unwatch is idempotent and waits for the watch to end.
// A signal that arrives after unwatch stays in the channel.
func cancelOnSignal(signals <-chan os.Signal, cancel context.CancelFunc) (unwatch func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-signals:
			cancel()
		case <-quit:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

func closeQuietly(sio stdio, what string, closeFn func() error) {
	if err := closeFn(); err != nil {
		fmt.Fprintf(sio.err, "corral: %s: %v\n", what, err)
	}
}

// outcome is how a turn ended, as corral run reports it.
type outcome struct {
	status agent.Status
	runID  string
	output []message.Message
	state  map[string]any
	usage  agent.Usage // the tokens the turn's model calls reported
	err    error       // nil when the turn completed
	kind   string      // err's kind
}

// runTurn starts the turn, feeds it stdin and signals until it settles,
// and returns its outcome. An error is a turn that could not start.
func runTurn(ctx context.Context, s *session.Session, opts runOptions, con *console, lines *lineReader,
	sio stdio) (outcome, error) {
	events := make(chan promptEvent, 16)
	stop := make(chan struct{})
	defer close(stop)
	sink := session.SinkSpec{ID: "console", Sink: streamSink(con, events, stop), Visibility: session.VisibilityConfirmed}
	req := agent.Request{Message: message.NewTextMessage(message.RoleUser, opts.message)}
	turn, err := s.Start(ctx, req, sink)
	if err != nil {
		return outcome{}, err
	}
	d := &driver{turn: turn, con: con, lines: lines, events: events, signals: sio.signals, terminal: sio.terminal}
	timedOut := d.drive(ctx, opts.timeout)
	d.reportUnused()
	res, waitErr := turn.Wait(context.Background())
	if err := writeRecording(opts, turn.RunID(), req, res, waitErr); err != nil {
		con.notice("corral: --record: %v", err)
	}
	o := newOutcome(turn.RunID(), res, waitErr)
	if timedOut && o.err != nil {
		o.err = fault.Wrap(fault.Timeout, o.err, "run", "the turn ran past --timeout %s", opts.timeout)
		o.kind = fault.Timeout.String()
	}
	return o, nil
}

// newOutcome reads a settled turn's result.
func newOutcome(runID string, res *agent.Result, waitErr error) outcome {
	o := outcome{status: agent.StatusFailed, runID: runID}
	var runErr error
	if res != nil {
		o.status, o.output, o.state, o.usage, runErr = res.Status, res.Output, res.State, res.Usage, res.Err
	}
	o.err = errors.Join(runErr, waitErr)
	if o.status == agent.StatusCompleted && o.err == nil {
		return o
	}
	def := fault.Internal
	switch o.status {
	case agent.StatusInterrupted:
		def = fault.Interrupted
	case agent.StatusCanceled, agent.StatusAborted:
		def = fault.Aborted
	}
	if o.err == nil {
		o.err = fault.New(def, "run", "the turn ended %s", o.status)
	}
	o.kind = fault.KindOr(fault.FromContext(o.err, "run"), def).String()
	return o
}

// printOutcome prints the outcome, as JSON or as a status line, and
// returns the exit code.
func printOutcome(con *console, sio stdio, opts runOptions, o outcome) int {
	if opts.json {
		if err := writeJSON(sio.out, newJSONResult(o)); err != nil {
			return report(sio.err, err)
		}
	} else {
		con.result(o.output)
		con.notice("%s", statusLine(o))
	}
	if o.status == agent.StatusCompleted && o.err == nil {
		return exitOK
	}
	return exitFailed
}
