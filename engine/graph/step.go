package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/sandbox"
)

// NodeError is the error of a node that failed: it names the graph and the
// node, and carries the kind of the node's error (Internal when it has
// none).
type NodeError struct {
	Graph string
	Node  string
	Err   error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("graph %q: node %q: %v", e.Graph, e.Node, e.Err)
}

// Unwrap exposes the kind and the node's error.
func (e *NodeError) Unwrap() []error {
	return []error{fault.KindOr(e.Err, fault.Internal), e.Err}
}

// stepInput is what one node run needs besides the run.
type stepInput struct {
	node  *builtNode
	board *agent.Board
	fork  *fork // nil outside a parallel wave
	// boardBytes is board's size (sandbox.BoardJSONBytes) when the engine
	// knows it, else 0.
	boardBytes int64
}

// runWave runs the nodes of a wave and returns the ones that route on:
// every node, except the branches of a parallel wave that were cancelled.
// After a sequential wave the run knows when its last node completed and,
// from what each node reported, the board's size (stepEnd).
func (r *runState) runWave(ctx context.Context, wave []string) ([]string, error) {
	if r.e.opts.Parallel.Enabled && len(wave) >= 2 {
		r.changes.remember(r.board)
		routes, err := r.runParallel(ctx, wave)  // each branch starts from r.boardBytes
		r.changes.compareStrict(r.board)         // what the merge changed
		r.waveEnd, r.boardBytes = time.Time{}, 0 // the merged board is measured after the wave
		return routes, err
	}
	for _, id := range wave {
		end, err := r.step(ctx, stepInput{node: r.e.nodes[id], board: r.board, boardBytes: r.boardBytes})
		r.waveEnd, r.boardBytes = end.at, end.boardBytes
		if err != nil {
			return nil, err
		}
	}
	return wave, nil
}

// stepEnd is what a step tells the wave: when it completed (the time of
// its step complete event; zero when unknown, as for a skipped node) and
// the board's size after it when the engine knows it (else 0).
type stepEnd struct {
	at         time.Time
	boardBytes int64
}

// step runs one node (REF 5.2.3): the skip condition, the ${board}
// resolution of its config, the read roles, step start, the handler with
// its retries, the write roles, and step complete or step error.
func (r *runState) step(ctx context.Context, in stepInput) (stepEnd, error) {
	n := in.node
	r.running.enter(n.id)
	defer r.running.leave(n.id)
	if n.skip != nil {
		skip, err := n.skip.eval(ctx, conditionVars(in.board.Vars, r.iterations), r.e.opts.Limits, r.run.Tenant)
		if err != nil {
			return stepEnd{}, r.stepFailed(ctx, n, err)
		}
		if skip {
			r.publishStep(ctx, stepComplete, n, event.StepPayload{Skipped: true})
			return stepEnd{boardBytes: in.boardBytes}, nil // the board is as it was
		}
	}
	cfg, err := resolveConfig(n, in.board.Vars)
	if err != nil {
		return stepEnd{}, r.stepFailed(ctx, n, err)
	}
	var before *agent.Board
	if n.roles != nil {
		if err := checkReads(n.id, *n.roles, in.board); err != nil {
			return stepEnd{}, r.stepFailed(ctx, n, err)
		}
		before = in.board.Clone()
	}
	r.publishStep(ctx, stepStart, n, event.StepPayload{})
	size, err := r.invoke(ctx, in, cfg)
	if err != nil {
		if in.fork != nil && in.fork.isCancelled(n.id) {
			r.publishStep(ctx, stepComplete, n, event.StepPayload{Skipped: true})
			return stepEnd{}, nil
		}
		return stepEnd{}, r.stepFailed(ctx, n, err)
	}
	if n.roles != nil {
		if err := checkWrites(n.id, *n.roles, before, in.board); err != nil {
			return stepEnd{}, r.stepFailed(ctx, n, err)
		}
	}
	return stepEnd{at: r.publishStep(ctx, stepComplete, n, event.StepPayload{}), boardBytes: size}, nil
}

// stepFailed publishes step error and returns the node's error.
func (r *runState) stepFailed(ctx context.Context, n *builtNode, err error) error {
	ne := &NodeError{Graph: r.e.doc.Name, Node: n.id, Err: err}
	r.publishStep(ctx, stepError, n, event.StepPayload{Error: err.Error()})
	return ne
}

// resolveConfig resolves the ${board} references of n's config, except in
// its literal keys; a config without references is returned as it is.
func resolveConfig(n *builtNode, vars map[string]any) (map[string]any, error) {
	if n.static {
		return n.config, nil
	}
	out := make(map[string]any, len(n.config))
	for k, v := range n.config {
		if n.literal[k] {
			out[k] = v
			continue
		}
		rv, err := ResolveRefs(v, vars)
		if err != nil {
			return nil, fault.Wrap(fault.Validation, err, "", "config.%s", k)
		}
		out[k] = rv
	}
	return out, nil
}

// invoke runs the handler, retrying up to max_node_retries times with a
// linear backoff and the board rolled back before each retry. Every
// attempt shares the step's host ABI, so the call budgets (events, logs)
// are per node step, not per attempt, and every retry counts as a node run
// against max_iterations. Interrupted, Aborted, BudgetExceeded and
// Validation errors and every *sandbox.LimitError are never retried.
// It returns the board's size after the call that succeeded when the
// handler reports it (Call.boardAfter), else 0.
func (r *runState) invoke(ctx context.Context, in stepInput, cfg map[string]any) (boardBytes int64, err error) {
	retries := r.e.opts.MaxNodeRetries
	var snapshot *agent.Board
	if retries > 0 {
		snapshot = in.board.Clone()
	}
	hctx := r.hostCtx
	if ctx != r.runCtx {
		hctx = agent.ContextWithHost(ctx, r.host)
	}
	st := r.stepCall(in)
	if in.node.shallow && in.fork == nil {
		r.changes.remember(in.board)
	}
	for attempt := 1; ; attempt++ {
		c := &st.first
		if attempt > 1 {
			c = &Call{}
		}
		err := in.node.handler.Run(hctx, r.call(c, in, cfg, &st.abi))
		if !in.node.sizes && in.fork == nil {
			r.changes.compare(in.node.shallow, in.board) // a handler that writes the board itself
		}
		if err == nil {
			if !in.node.sizes {
				return 0, nil // a handler that may write the board after its runtime's report
			}
			return c.boardAfter, nil
		}
		if attempt > retries || !retryable(err) || ctx.Err() != nil {
			return 0, err
		}
		if berr := r.countRetry(in.node.id, attempt); berr != nil {
			return 0, errors.Join(berr, err)
		}
		r.logger.WarnContext(ctx, "graph node failed, retrying", "graph", r.e.doc.Name, "run_id", r.run.ID,
			"node", in.node.id, "attempt", attempt, "error", err)
		if !sleep(ctx, r.e.opts.RetryBackoff*time.Duration(attempt)) {
			return 0, err
		}
		restored := snapshot.Clone()
		in.board.Vars, in.board.Channels = restored.Vars, restored.Channels
		if in.fork == nil {
			r.changes.unknown = true
		}
	}
}

// countRetry counts one retry of node as a node run; it is BudgetExceeded
// when the run's node runs would then pass max_iterations (REF 5.2.3).
func (r *runState) countRetry(node string, attempt int) error {
	n := int(r.retries.Add(1))
	if max := r.e.opts.MaxIterations; r.iterations+r.waveLen+n > max {
		return fault.New(fault.BudgetExceeded, opExecute,
			"graph %q: node %q: retry %d would exceed max_iterations %d (%d node runs, a wave of %d, %d retries)",
			r.e.doc.Name, node, attempt, max, r.iterations, r.waveLen, n)
	}
	return nil
}

// retryable reports whether a node error may be retried: never a sandbox
// limit (a wall-time LimitError is a Timeout, and still not retried).
func retryable(err error) bool {
	var le *sandbox.LimitError
	if errors.As(err, &le) {
		return false
	}
	for _, k := range []*fault.Kind{fault.Interrupted, fault.Aborted, fault.BudgetExceeded, fault.Validation} {
		if fault.Is(err, k) {
			return false
		}
	}
	return true
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// stepCall returns the stepCall of a step: outside a parallel wave the
// run's own, made ready again (a Call is valid only during its Run), else
// a new one for the branch.
func (r *runState) stepCall(in stepInput) *stepCall {
	if in.fork != nil {
		return &stepCall{}
	}
	if r.cache.seq == nil {
		r.cache.seq = &r.own.seq
	} else {
		r.cache.seq.reset()
	}
	return r.cache.seq
}

// reset readies a used stepCall for the next step without clearing all of
// it: call overwrites first, and the ABI is made again at its next use.
func (st *stepCall) reset() {
	st.abi.made = false
	st.abi.abi.once = sync.Once{}
	st.abi.abi.d = nil
}

// stepCall is what one node step needs: the Call of its first
// attempt and the host ABI its attempts share.
type stepCall struct {
	first Call
	abi   stepABI
}

// call fills c, the Call of one handler attempt; its ABI is the step's
// shared one.
func (r *runState) call(c *Call, in stepInput, cfg map[string]any, shared *stepABI) *Call {
	*c = Call{Node: in.node.id, Type: in.node.typ, Config: cfg, Board: in.board, Host: r.host, Run: r.run,
		RunInfo: r.info, Limits: r.e.opts.Limits, step: shared, rs: r, boardBytes: in.boardBytes,
		static: in.node.static}
	if in.fork != nil {
		c.Parallel, c.ForkID, c.BranchID = in.fork.cancelNode, in.fork.id, in.node.id
	}
	return c
}

// abi returns the step's ABI for c.
func (r *runState) abi(c *Call) sandbox.ABI {
	return c.step.get(r, c, r.e.hostNames)
}

// stepABI is the host ABI of one node step, shared by its attempts: the
// first attempt that asks for it fixes its config.
type stepABI struct {
	mu   sync.Mutex
	made bool
	abi  lazyABI
}

// get returns the step's ABI, taking c's node, limits and branch on the
// first call.
func (s *stepABI) get(r *runState, c *Call, names []string) *lazyABI {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.made {
		s.abi = lazyABI{names: names, rs: r, node: c.Node, limits: c.Limits, forkID: c.ForkID, branchID: c.BranchID}
		s.made = true
	}
	return &s.abi
}

// lazyABI makes its hostabi.Dispatcher, and the config it takes, on the
// first call, so that a script that never calls the host does not pay for
// either.
type lazyABI struct {
	names                  []string // hostabi.Names, read-only
	rs                     *runState
	node, forkID, branchID string
	limits                 sandbox.Limits
	once                   sync.Once
	d                      *hostabi.Dispatcher
}

var _ sandbox.ABI = (*lazyABI)(nil)

// config is the dispatcher's config: the run's host, journal, logger and
// interrupt latch, the step's node, limits and branch.
func (a *lazyABI) config() hostabi.Config {
	r := a.rs
	return hostabi.Config{Host: r.host, Run: r.run, Node: a.node, Limits: a.limits, Journal: r.journal,
		Logger: r.logger, Interrupts: r.latch, ForkID: a.forkID, BranchID: a.branchID}
}

// Functions lists the catalog's names: the engine's copy, made at build.
func (a *lazyABI) Functions() []string { return a.names }

// Call runs the host function through the call's dispatcher.
func (a *lazyABI) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	a.once.Do(func() { a.d = hostabi.NewDispatcher(a.config()) })
	return a.d.Call(ctx, name, args)
}

// watchDelay is how long a wave runs before the engine watches the host's
// interrupts on the event (a goroutine waiting on them): a shorter wave
// costs no goroutine, and the wave boundaries' polls see an interrupt that
// came during it.
const watchDelay = 200 * time.Microsecond

// watchInterrupts returns ctx made to end, with the interrupt as its
// cause, interrupt_grace after the run's host interrupts it while a wave
// runs, so that a node that runs on (a loop that never calls
// host.checkInterrupt) is stopped rather than left to its wall time; the
// run then ends Interrupted at its last checkpoint. stop ends the watch.
// A host without interrupts is not watched.
func (r *runState) watchInterrupts(ctx context.Context) (_ context.Context, stop func()) {
	ch := r.host.Interrupts()
	if ch == nil {
		return ctx, func() {}
	}
	wctx, cancel := context.WithCancelCause(ctx)
	r.watch = &waveWatch{latch: r.latch, ch: ch, grace: r.e.opts.InterruptGrace, cancel: cancel}
	r.watch.clock, _ = agent.CapabilityFromHost[agent.InterruptClock](r.host)
	return wctx, func() {
		r.watch.end()
		cancel(errRunEnded)
	}
}

// errRunEnded is the cause of a run's watch context once the run ended.
var errRunEnded = errors.New("the run ended")

// waveWatch waits for an interrupt while a wave runs and stops the run
// interrupt_grace after one. A wave that runs past watchDelay gets a
// watcher: the delay timer's goroutine, which waits on the run's latch
// and the host's channel (hostabi.InterruptLatch.Wait) until the wave
// ends. end stops the watcher and waits for it, so that an interrupt it
// took from the host's channel is in the latch before the wave boundary
// polls it: the watcher never takes an interrupt out of sight of the
// boundaries.
type waveWatch struct {
	latch  *hostabi.InterruptLatch
	ch     <-chan agent.Interrupt
	grace  time.Duration
	cancel context.CancelCauseFunc
	clock  agent.InterruptClock // when the host sent its interrupt; nil: it cannot tell

	mu      sync.Mutex
	running bool
	tick    *time.Timer   // the watchDelay of the running wave
	quit    chan struct{} // closed by end to stop the wave's watcher
	exited  chan struct{} // closed when the wave's watcher returns; nil when none runs
	stop    *time.Timer   // the grace, once an interrupt was seen
}

// begin starts watching a wave; a nil watch watches nothing.
func (w *waveWatch) begin() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running = true
	if w.tick == nil {
		w.tick = time.AfterFunc(watchDelay, w.watchWave)
	} else {
		w.tick.Reset(watchDelay)
	}
}

// end stops watching the wave: it returns once the wave's watcher, if
// one started, has returned.
func (w *waveWatch) end() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.running = false
	if w.tick != nil {
		w.tick.Stop()
	}
	if w.stop != nil {
		w.stop.Stop()
		w.stop = nil
	}
	exited := w.exited
	if exited != nil {
		close(w.quit)
		w.quit, w.exited = nil, nil
	}
	w.mu.Unlock()
	if exited != nil {
		<-exited
	}
}

// watchWave is the watcher of the running wave, run by the delay timer:
// it waits for an interrupt until end stops it, and an interrupt starts
// the grace. A timer that fires once the wave ended, or while a watcher
// runs, does nothing.
func (w *waveWatch) watchWave() {
	w.mu.Lock()
	if !w.running || w.exited != nil {
		w.mu.Unlock()
		return
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	w.quit, w.exited = quit, exited
	w.mu.Unlock()
	defer close(exited)
	intr, ok := w.latch.Wait(quit, w.ch)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running && w.quit == quit && w.stop == nil {
		w.stop = afterFuncPrecise(w.graceLeft(), func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.running && w.quit == quit {
				w.cancel(agent.Interrupted(intr))
			}
		})
	}
}

// graceLeft is what is left of the grace of the interrupt the watcher
// took, which runs from when the host sent it when the host can tell
// (agent.InterruptClock): neither watchDelay nor the watcher's wake-up
// is added to it.
func (w *waveWatch) graceLeft() time.Duration {
	if w.clock != nil {
		if sent, ok := w.clock.InterruptSent(); ok {
			return min(w.grace, time.Until(sent.Add(w.grace)))
		}
	}
	return w.grace
}

// timerSlack is how late the Go runtime's timers fire when every thread
// but the one running a node sleeps: the sleeping thread waits on the
// poller in whole milliseconds, so a timer is up to about a millisecond
// late.
const timerSlack = time.Millisecond

// afterFuncPrecise is time.AfterFunc to within microseconds rather than
// timerSlack: its timer fires timerSlack early and the callback waits out
// the rest on the CPU. It is for rare events (an interrupt's grace), not
// for every wave. Stop stops it as it stops a time.Timer; a callback that
// is already waiting runs f anyway, which must check that it is still
// wanted.
func afterFuncPrecise(d time.Duration, f func()) *time.Timer {
	at := time.Now().Add(d)
	return time.AfterFunc(max(d-timerSlack, 0), func() {
		for time.Until(at) > 0 {
			runtime.Gosched()
		}
		f()
	})
}
