package graph

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
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

// runState is one Execute.
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
	// runPart is the run id as it stands in a subject.
	runPart string
	// maxBoard is the run's max_board_bytes (maxBoardBytes).
	maxBoard int64
	// save is the context of the run's checkpoint saves and its run-end
	// publish, made at the first: without the run's cancellation (the
	// checkpoints of a run being cancelled are still saved, its run end
	// still published), each bounded by its own timeout.
	save *saveCtx
	// runCtx is the run's context and hostCtx the same carrying the host
	// (agent.ContextWithHost), made once for the nodes that run in it.
	runCtx, hostCtx context.Context
	headers         headerCache
	// span is the trace span of the run's ctx, stamped on its step events.
	span event.Span
	// seq is the stepCall of the steps of sequential waves, reused.
	seq *stepCall
	// boardBytes is the board's size when the engine knows it, else 0:
	// measured after the last wave (checkBoard), or reported by the last
	// node of a sequential wave that ran (a script node, Call.boardAfter)
	// or was skipped.
	boardBytes int64
	// waveEnd is when the last node of a sequential wave completed (the
	// time of its step complete event), the time of the wave's
	// checkpoint; zero when unknown (a parallel wave, a skipped node).
	waveEnd time.Time
	// ids makes the ids of the run's step events, several per allocation.
	ids event.IDBlock
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
		info:    sandbox.RunInfo{RunID: run.ID, AgentID: run.AgentID, ContextID: run.ContextID, ParentRunID: run.ParentRunID},
		runPart: event.SanitiseID(run.ID)}
	r.latch = &r.own.latch
	r.running.ids = r.own.running[:0]
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
	if lt := r.runTime(); lt > 0 && (d == 0 || lt < d) {
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
		routes, err := r.runWave(ctx, wave)
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
	if intr, ok := r.latch.Poll(r.host.Interrupts()); ok {
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
	intr, interrupted := r.latch.Poll(r.host.Interrupts())
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
	if ctx.Err() != nil && !errors.Is(err, fault.Interrupted) {
		return r.contextError(ctx)
	}
	var ne *NodeError
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

// checkpoint writes the wave-boundary checkpoint through the host; a
// failure is only logged. steps is the wave's own slice, which nothing
// changes afterwards: the checkpoint holds it as it is.
func (r *runState) checkpoint(ctx context.Context, steps []string) {
	if r.save == nil {
		r.save = r.saveContext(ctx)
	}
	// The board goes as it is: a Checkpointer copies what it keeps
	// (agent.Checkpointer), and nothing changes the board during the save.
	// A sequential wave ended when its last node completed.
	now := r.waveEnd
	if now.IsZero() {
		now = time.Now()
	}
	r.waveEnd = time.Time{}
	cp := agent.Checkpoint{
		ExecID: r.run.ID, Steps: steps, Iteration: r.iterations, Board: r.board,
		Attributes: r.e.cpAttrs, Timestamp: now.UTC(),
		OriginalStartedAt: r.run.StartedAt, SpecVersion: r.e.doc.SpecVersion(),
	}
	// A wave that completed is worth saving even when the run is being
	// cancelled: the save gets a ctx of its own.
	err := r.host.Checkpoint(r.save.armAt(now, r.e.opts.RunEndPublishTimeout), cp)
	r.save.disarm()
	if err != nil {
		r.logger.WarnContext(ctx, "graph checkpoint failed", "graph", r.e.doc.Name, "run_id", r.run.ID,
			"iteration", r.iterations, "error", err)
	}
}

// successors returns the deduplicated targets of the edges out of steps
// whose condition is empty or true, in step order and then document
// order. Conditions see the board vars plus __iterations. A single
// successor is the edge's own read-only slice.
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
				ok, err := be.cond.eval(ctx, vars, r.e.opts.Limits)
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

// publishRunStart publishes run start; a failure is only logged
// (REF 5.7.1).
func (r *runState) publishRunStart(ctx context.Context) {
	if err := r.publish(ctx, event.SubjectRunStart(r.run.ID), r.e.runPayload, ""); err != nil {
		r.logger.WarnContext(ctx, "graph run start not published", "graph", r.e.doc.Name, "run_id", r.run.ID, "error", err)
	}
}

// end publishes run end with a ctx of its own, detached from the run's
// cancellation and bounded by run_end_publish_timeout (REF 5.7.2);
// a failure is joined into the run's error (REF 5.7.4).
func (r *runState) end(parent context.Context, runErr error) error {
	if r.save == nil {
		r.save = r.saveContext(parent)
	}
	defer r.save.stop()
	ctx := r.save.arm(r.e.opts.RunEndPublishTimeout)
	var p any = r.e.runPayload
	if runErr != nil {
		p = event.RunPayload{Graph: r.e.doc.Name, Error: runErr.Error()}
	}
	if err := r.publish(ctx, event.SubjectRunEnd(r.run.ID), p, ""); err != nil {
		return errors.Join(runErr, &agent.RunEndPublishError{RunID: r.run.ID, Err: err})
	}
	return runErr
}

// publish publishes payload on subject with the run_id, agent_id and
// graph_id headers, and node_id when node is set.
func (r *runState) publish(ctx context.Context, subject string, payload any, node string) error {
	env, err := event.NewEnvelope(ctx, subject, payload)
	if err != nil {
		return err
	}
	env.Headers = r.headers.get(r, node)
	return r.host.Publish(ctx, env)
}

// headerCache keeps what a run's envelopes share, made at the first
// event that needs it: the run's headers, which its run and step events
// carry, and per node the subjects of its step start and step complete
// and the headers of the events that add node_id (a branch's stream
// deltas). Envelopes are read-only once published (event.Envelope), so
// events share headers maps.
type headerCache struct {
	mu     sync.Mutex
	run    map[string]string
	byNode []nodeEvents // by node index
	// made is set, holding byNode, once the step events of every node
	// are made (a small graph, at its first step event): from then on
	// node reads byNode without the lock.
	made atomic.Pointer[[]nodeEvents]
}

// nodeEvents is what the events of one node of a run share; the errors
// are set when a subject is not valid (longer than event.MaxSubjectLen).
type nodeEvents struct {
	// run is the run's headers (headerCache.run), which step events
	// carry: the node is in their subject and payload.
	run map[string]string
	// withNode is the run's headers and node_id, made at the node's first
	// event that carries them.
	withNode              map[string]string
	start, complete       string
	startErr, completeErr error
}

func (h *headerCache) get(r *runState, node string) map[string]string {
	if node == "" {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.runHeaders(r)
	}
	n, ok := r.e.nodes[node]
	if !ok {
		return newHeaders(r, node)
	}
	ev := h.node(r, n)
	h.mu.Lock()
	defer h.mu.Unlock()
	if ev.withNode == nil {
		ev.withNode = newHeaders(r, node)
	}
	return ev.withNode
}

// runHeaders returns the run's headers without a node; h.mu is held.
func (h *headerCache) runHeaders(r *runState) map[string]string {
	if h.run == nil {
		h.run = newHeaders(r, "")
	}
	return h.run
}

// node returns what n's step events share, made at its first; its run
// headers and subjects are read-only once made.
func (h *headerCache) node(r *runState, n *builtNode) *nodeEvents {
	if made := h.made.Load(); made != nil {
		return &(*made)[n.index]
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byNode == nil {
		h.byNode = make([]nodeEvents, len(r.e.doc.Nodes))
	}
	ev := &h.byNode[n.index]
	if ev.run == nil {
		ev.run = h.runHeaders(r)
		if ev.start == "" {
			h.subjects(r, n.index)
		}
		if len(h.byNode) <= smallGraph { // subjects made every node's
			for i := range h.byNode {
				h.byNode[i].run = ev.run
			}
			h.made.Store(&h.byNode)
		}
	}
	return ev
}

// smallGraph is the most nodes a graph may have for the step subjects of
// all its nodes to be made at once, in one string, at a run's first step
// event: it saves an allocation per node, and a larger graph whose run
// steps through a few of its nodes does not pay for the others.
const smallGraph = 32

// subjects makes the step start and complete subjects of node i, or of
// every node of a small graph, as slices of one string; h.mu is held.
func (h *headerCache) subjects(r *runState, i int) {
	actors := r.e.actors.get(r.e, r.run.AgentID)
	from, to := i, i+1
	if len(actors) <= smallGraph {
		from, to = 0, len(actors)
	}
	prefix := event.SubjectPrefixRun + r.runPart + ".step."
	size := 0
	for _, a := range actors[from:to] {
		size += 2*(len(prefix)+len(a)) + len(".start.complete")
	}
	var b strings.Builder
	b.Grow(size)
	for _, a := range actors[from:to] {
		b.WriteString(prefix)
		b.WriteString(a)
		b.WriteString(".start")
		b.WriteString(prefix)
		b.WriteString(a)
		b.WriteString(".complete")
	}
	all, at := b.String(), 0
	for j, a := range actors[from:to] {
		ev := &h.byNode[from+j]
		start, complete := len(prefix)+len(a)+len(".start"), len(prefix)+len(a)+len(".complete")
		ev.start, ev.complete = all[at:at+start], all[at+start:at+start+complete]
		at += start + complete
		// Their segments are sanitised ids (event.SanitiseID: never empty,
		// no '.', '*' or '>'), so only their length can make them invalid.
		if len(ev.start) > event.MaxSubjectLen {
			ev.startErr = event.ValidateSubject(ev.start)
		}
		if len(ev.complete) > event.MaxSubjectLen {
			ev.completeErr = event.ValidateSubject(ev.complete)
		}
	}
}

func newHeaders(r *runState, node string) map[string]string {
	m := make(map[string]string, 4)
	m[event.HeaderRunID] = r.run.ID
	m[event.HeaderAgentID] = r.run.AgentID
	m[event.HeaderGraphID] = r.e.doc.Name
	if node != "" {
		m[event.HeaderNodeID] = node
	}
	return m
}
