package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
)

const opExecute = "execute graph"

// JournalProvider is a host capability (found with
// agent.CapabilityFromHost) that hands the engine the journal of a run;
// the host ABI calls of every node of the run are recorded there. Without
// it each Execute records into a journal of its own.
type JournalProvider interface {
	Journal() *hostabi.Journal
}

// runState is one Execute: the run's state (its caches apart, in
// runCaches).
type runState struct {
	e          *Engine
	run        agent.Run
	host       agent.Host
	board      *agent.Board
	latch      *hostabi.InterruptLatch
	journal    *hostabi.Journal
	info       sandbox.RunInfo
	logger     *slog.Logger
	iterations int
	// waveLen is the size of the running wave; retries counts the retries
	// of its nodes (node runs too, REF 5.2.3), folded into
	// iterations after the wave.
	waveLen int
	retries atomic.Int64
	running runningNodes
	// watch stops the nodes of a wave interrupt_grace after an interrupt;
	// nil when the host has no interrupts.
	watch *waveWatch
	// meter charges the run's script time to its tenant (agent.Meter);
	// nil when the host has none.
	meter agent.Meter
	// save is the context of the run's checkpoint saves and its run-end
	// publish, made at the first: without the run's cancellation (the
	// checkpoints of a run being cancelled are still saved, its run end
	// still published), each bounded by its own timeout.
	save *saveCtx
	// runCtx is the run's context and hostCtx the same carrying the host
	// (agent.ContextWithHost), made once for the nodes that run in it.
	runCtx, hostCtx context.Context
	// span is the trace span of the run's ctx, stamped on its step events.
	span event.Span
	// boardBytes is the board's size when the engine knows it, else 0:
	// measured after the last wave (checkBoard), or counted by the last
	// node of a sequential wave that ran (a script node's writes,
	// Call.boardAfter) or was skipped (stepEnd).
	boardBytes int64
	// waveEnd is when the last node of a sequential wave completed (the
	// time of its step complete event), the time of the wave's
	// checkpoint; zero when unknown (a parallel wave, a skipped node).
	waveEnd time.Time
	// changes is what the waves changed since the last checkpoint. Code
	// that changes the board outside a node's handler must record it
	// there (noteWrites) or set changes.unknown, or a store keeping deltas
	// would miss the change.
	changes boardChanges
	cache   runCaches
	// own holds what a run needs one of, allocated with the runState
	// rather than each on its own: the latch, the journal when the host
	// hands none, the save context (save) and the sequential waves'
	// stepCall (seq).
	own struct {
		latch   hostabi.InterruptLatch
		journal hostabi.Journal
		save    saveCtx
		seq     stepCall
		running [1]string // runningNodes' first
	}
}

// runCaches is what a run makes once and reuses rather than makes again:
// none of it is the run's state, and each is made at its first use.
type runCaches struct {
	// runPart is the run id as it stands in a subject.
	runPart string
	// maxBoard is the run's max_board_bytes (maxBoardBytes).
	maxBoard int64
	// headers are what the run's envelopes share (stepevents.go).
	headers headerCache
	// ids makes the ids of the run's step events, several per allocation.
	ids event.IDBlock
	// seq is the stepCall of the steps of sequential waves, reused.
	seq *stepCall
}

// Execute runs the graph on board (REF 5.2) and returns the final
// board. It publishes run start and, from a deferred function, run end
// (REF 5.7); in between it runs waves of nodes from the frontier
// (the resume checkpoint's successors, a WithStartNode override, or the
// entry) until the frontier is empty, writing a checkpoint after every
// wave. Interrupts are polled before and after each wave only.
//
// Errors carry a kind: Interrupted (an *agent.InterruptedError; the board
// names the node in __interrupted_node), Timeout, Aborted (with
// context.Canceled in the chain when ctx was cancelled), BudgetExceeded
// (max_iterations, parallel.max_branches, a sandbox limit), Validation (a
// condition, a reference, a resume checkpoint), or the kind of a failed
// node's error, wrapped in a *NodeError. A failed run-end publish is
// joined as an *agent.RunEndPublishError.
func (e *Engine) Execute(ctx context.Context, run agent.Run, host agent.Host, board *agent.Board) (out *agent.Board, err error) {
	switch {
	case ctx == nil:
		return board, fault.New(fault.Validation, opExecute, "ctx must not be nil")
	case agent.IsNil(host):
		return board, fault.New(fault.Validation, opExecute, "graph %q: host must not be nil", e.doc.Name)
	}
	r := e.newRun(run, host, board)
	r.span, _ = event.SpanFromContext(ctx)
	defer func() { err = r.end(ctx, err) }()
	defer r.beginScopes(ctx)()
	r.publishRunStart(ctx)
	runCtx, cancel := r.context(ctx)
	defer cancel()
	runCtx, stopWatching := r.watchInterrupts(runCtx)
	defer stopWatching()
	r.runCtx, r.hostCtx = runCtx, agent.ContextWithHost(runCtx, host)
	err = r.loop(runCtx)
	return r.board, err
}

func (e *Engine) newRun(run agent.Run, host agent.Host, board *agent.Board) *runState {
	if board == nil {
		board = agent.NewBoard()
	}
	if board.Vars == nil {
		board.Vars = map[string]any{}
	}
	if board.Channels == nil {
		board.Channels = map[string][]message.Message{}
	}
	r := &runState{e: e, run: run, host: host, board: board, logger: e.opts.Logger,
		info:  sandbox.RunInfo{RunID: run.ID, AgentID: run.AgentID, ContextID: run.ContextID, ParentRunID: run.ParentRunID, Tenant: run.Tenant},
		cache: runCaches{runPart: event.SanitiseID(run.ID)}}
	r.latch = &r.own.latch
	r.running.ids = r.own.running[:0]
	r.meter, _ = agent.CapabilityFromHost[agent.Meter](host)
	if p, ok := agent.CapabilityFromHost[JournalProvider](host); ok {
		r.journal = p.Journal()
	}
	if r.journal == nil {
		r.journal = &r.own.journal
	}
	return r
}

// beginScopes tells every runtime that keeps state per run
// (sandbox.RunScoper) that the run begins, and returns the function that
// ends it for all of them.
func (r *runState) beginScopes(ctx context.Context) (endAll func()) {
	if len(r.e.scopers) == 0 {
		return func() {}
	}
	var ends []func()
	for _, s := range r.e.scopers {
		if end := s.BeginRun(ctx, r.info); end != nil {
			ends = append(ends, end)
		}
	}
	return func() {
		for _, end := range slices.Backward(ends) {
			end()
		}
	}
}

// context bounds the run by build.timeout and the run's run_time,
// whichever is shorter; the cause says which one ran out.
func (r *runState) context(ctx context.Context) (context.Context, context.CancelFunc) {
	d := r.e.opts.Timeout
	if lt := r.e.runTime(); lt > 0 && (d == 0 || lt < d) {
		return r.runTimeContext(ctx, lt)
	}
	if d == 0 {
		return context.WithCancel(ctx)
	}
	cause := fault.New(fault.Timeout, opExecute, "graph %q: build.timeout of %s exceeded", r.e.doc.Name, d)
	return context.WithTimeoutCause(ctx, d, cause)
}

// loop runs waves until the frontier is empty.
func (r *runState) loop(ctx context.Context) error {
	frontier, err := r.frontier(ctx)
	if err != nil {
		return err
	}
	for len(frontier) > 0 {
		wave := dedup(frontier)
		if err := r.beforeWave(ctx, wave); err != nil {
			return err
		}
		r.watch.begin()
		routes, err := r.runWave(ctx, wave)
		r.watch.end()
		if err != nil {
			return r.failed(ctx, err)
		}
		if frontier, err = r.afterWave(ctx, wave, routes); err != nil {
			return err
		}
	}
	return nil
}

// beforeWave checks ctx, the interrupts and the iteration budget
// (REF 5.2.2).
func (r *runState) beforeWave(ctx context.Context, wave []string) error {
	if ctx.Err() != nil {
		return r.contextError(ctx)
	}
	if intr, ok := r.pollInterrupt(wave[0], boundaryBeforeWave); ok {
		r.board.Vars[VarInterruptedNode] = wave[0]
		return agent.Interrupted(intr)
	}
	if max := r.e.opts.MaxIterations; r.iterations+len(wave) > max {
		return fault.New(fault.BudgetExceeded, opExecute, "graph %q: %d node runs plus a wave of %d exceed max_iterations %d",
			r.e.doc.Name, r.iterations, len(wave), max)
	}
	r.waveLen = len(wave)
	return nil
}

// afterWave polls for an interrupt, counts the wave, writes the checkpoint
// and computes the next frontier (REF 5.2.4).
func (r *runState) afterWave(ctx context.Context, wave, routes []string) ([]string, error) {
	if err := r.checkBoard(wave); err != nil {
		return nil, err
	}
	intr, interrupted := r.pollInterrupt(wave[len(wave)-1], boundaryAfterWave)
	if interrupted {
		r.board.Vars[VarInterruptedNode] = wave[len(wave)-1]
	}
	r.iterations += len(wave) + int(r.retries.Swap(0))
	r.checkpoint(ctx, routes)
	if interrupted {
		return nil, agent.Interrupted(intr)
	}
	return r.successors(ctx, routes)
}

// failed turns a wave's error into the run's: the ctx's own error when the
// run's ctx ended, else the node's. A node that stopped at an interrupt is
// recorded in __interrupted_node.
func (r *runState) failed(ctx context.Context, err error) error {
	var ne *NodeError
	if ctx.Err() != nil && !errors.Is(err, fault.Interrupted) {
		cerr := r.contextError(ctx)
		if errors.Is(cerr, fault.Interrupted) && errors.As(err, &ne) { // stopped after interrupt_grace
			r.board.Vars[VarInterruptedNode] = ne.Node
		}
		return cerr
	}
	if errors.Is(err, fault.Interrupted) && errors.As(err, &ne) {
		r.board.Vars[VarInterruptedNode] = ne.Node
	}
	return err
}

// contextError classifies the end of ctx by its cause: an interrupt stays
// Interrupted, a deadline is Timeout, a cancel is Aborted (keeping
// context.Canceled in the chain).
func (r *runState) contextError(ctx context.Context) error {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, fault.Interrupted):
		return cause
	case isRunTime(cause):
		return cause
	case fault.KindOf(cause) != nil:
		return fault.Wrap(fault.KindOf(cause), cause, opExecute, "graph %q", r.e.doc.Name)
	case errors.Is(cause, context.DeadlineExceeded):
		return fault.Wrap(fault.Timeout, cause, opExecute, "graph %q", r.e.doc.Name)
	}
	return fault.Wrap(fault.Aborted, cause, opExecute, "graph %q", r.e.doc.Name)
}

// successors returns the deduplicated targets of the edges out of steps
// whose condition is empty or true, in step order and then document
// order. Conditions see the board vars plus __iterations. A single
// successor is the edge's own read-only slice. A condition stopped because
// the run's ctx ended fails the run with the ctx's error (contextError):
// a run_time that runs out during a condition is Timeout, not Aborted.
func (r *runState) successors(ctx context.Context, steps []string) ([]string, error) {
	var vars map[string]any
	var first *builtEdge
	var next []string
	for _, s := range steps {
		for _, be := range r.e.out[s] {
			if be.cond != nil {
				if vars == nil {
					vars = conditionVars(r.board.Vars, r.iterations)
				}
				ok, err := be.cond.eval(ctx, vars, r.e.opts.Limits, r.run.Tenant)
				if err != nil && ctx.Err() != nil {
					return nil, r.contextError(ctx) // the run ended while the condition ran
				}
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
			}
			switch {
			case be.to == End:
			case first == nil:
				first = be
			case next == nil && be.to != first.to:
				next = []string{first.to, be.to}
			case next != nil && !slices.Contains(next, be.to):
				next = append(next, be.to)
			}
		}
	}
	if next == nil && first != nil {
		return first.only, nil
	}
	return next, nil
}

// dedup removes repeated ids, keeping the first of each; ids without
// repeats are returned as they are.
func dedup(ids []string) []string {
	for i := 1; i < len(ids); i++ {
		if slices.Contains(ids[:i], ids[i]) {
			return dedupCopy(ids)
		}
	}
	return ids
}

func dedupCopy(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// runTimeError is the error of a run that ran past its run_time: it wraps
// the *sandbox.LimitError (kind Timeout) whose Node is the node that was
// running, or the graph when the time ran out between waves.
type runTimeError struct {
	Graph   string
	Between bool // no node was running
	Err     *sandbox.LimitError
}

func (e *runTimeError) Error() string {
	if e.Between {
		return fmt.Sprintf("%s: graph %q: between waves: %v", opExecute, e.Graph, e.Err)
	}
	return fmt.Sprintf("%s: graph %q: %v", opExecute, e.Graph, e.Err)
}

// Unwrap exposes the LimitError and its kind.
func (e *runTimeError) Unwrap() error { return e.Err }

// isRunTime reports whether err is a run's run_time error.
func isRunTime(err error) bool {
	var rte *runTimeError
	return errors.As(err, &rte)
}

// RunTime is the bound of every run of the engine (REF 5.2.2), 0 for
// none. It comes from what the document sets: the smallest run_time of
// the engine's limits and of the settings of every bound runtime that
// tells them (ConfiguredRuntime). A runtime's default is not a setting:
// only when nothing sets a run_time does the run get the smallest
// default of the bound runtimes that tell their limits (LimitedRuntime;
// sandbox.DefaultRunTime for js and wasm). A LimitedRuntime that does not
// tell its settings apart counts as having set its run_time.
func (e *Engine) RunTime() time.Duration { return e.runTime() }

// runTimeOf computes Engine.RunTime from the options.
func runTimeOf(o Options) time.Duration {
	smaller := func(d, v time.Duration) time.Duration {
		if v > 0 && (d == 0 || v < d) {
			return v
		}
		return d
	}
	set, defaults := o.Limits.RunTime, time.Duration(0)
	for _, rt := range o.Runtimes {
		switch lr := rt.(type) {
		case ConfiguredRuntime:
			set = smaller(set, lr.ConfiguredLimits().RunTime)
			defaults = smaller(defaults, lr.Limits().RunTime)
		case LimitedRuntime:
			set = smaller(set, lr.Limits().RunTime)
		}
	}
	if set > 0 {
		return set
	}
	return defaults
}

// runTimeContext ends the run after d with a *runTimeError naming what was
// running then.
func (r *runState) runTimeContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(d, func() {
		node, ok := r.running.first()
		e := &runTimeError{Graph: r.e.doc.Name, Between: !ok,
			Err: &sandbox.LimitError{Limit: sandbox.LimitRunTime, Node: node, Max: int64(d)}}
		if !ok {
			e.Err.Node = r.e.doc.Name
		}
		cancel(e)
	})
	return rctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// runningNodes is the set of nodes running now; a parallel wave runs
// several.
type runningNodes struct {
	mu  sync.Mutex
	ids []string
}

func (s *runningNodes) enter(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, id)
}

func (s *runningNodes) leave(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.ids, id); i >= 0 {
		s.ids = slices.Delete(s.ids, i, i+1)
	}
}

// first returns the node that started running first, if any.
func (s *runningNodes) first() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ids) == 0 {
		return "", false
	}
	return s.ids[0], true
}

var _ error = (*runTimeError)(nil)
