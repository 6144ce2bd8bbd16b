package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// The causes a branch's ctx is cancelled with.
var (
	errBranchCancelled = fault.New(fault.Aborted, opExecute, "branch cancelled by parallel.cancelNode")
	errSiblingFailed   = fault.New(fault.Aborted, opExecute, "a sibling branch failed")
)

// fork is one parallel wave.
type fork struct {
	id       string
	mu       sync.Mutex
	branches []*branch // in wave order
}

// branch is one node of a parallel wave, on a private board.
type branch struct {
	node  *builtNode
	board *agent.Board
	// boardBytes is the size of board, a copy of the pre-fork board, when
	// the engine knows it (stepInput.boardBytes).
	boardBytes int64
	ctx        context.Context
	cancel     context.CancelCauseFunc
	stop       context.CancelFunc // releases the branch_timeout timer
	timeout    error              // the cause of a branch_timeout; nil without one
	err        error
	cancelled  bool   // by parallel.cancelNode
	reason     string // its reason
}

// cancelNode cancels the branch of node id (parallel.cancelNode): it stops
// the branch and makes its merge a no-op. It reports false for a node that
// is not a branch of this wave or is already cancelled.
func (f *fork) cancelNode(id, reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.branches {
		if b.node.id == id {
			if b.cancelled {
				return false
			}
			b.cancelled, b.reason = true, reason
			b.cancel(errBranchCancelled)
			return true
		}
	}
	return false
}

func (f *fork) isCancelled(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.branches {
		if b.node.id == id {
			return b.cancelled
		}
	}
	return false
}

// failAll stops every branch but failed.
func (f *fork) failAll(failed *branch) {
	for _, b := range f.branches {
		if b != failed {
			b.cancel(errSiblingFailed)
		}
	}
}

// failure returns the first branch, in wave order, that failed on its
// own: not cancelled, and not stopped because a sibling failed.
func (f *fork) failure() *branch {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.branches {
		if b.err != nil && !b.cancelled && !errors.Is(context.Cause(b.ctx), errSiblingFailed) {
			return b
		}
	}
	for _, b := range f.branches { // only siblings' stops: the run's ctx ended
		if b.err != nil && !b.cancelled {
			return b
		}
	}
	return nil
}

// runParallel runs a wave of two or more nodes as parallel branches
// (REF 5.6) and returns the nodes that route on: every branch that
// was not cancelled.
func (r *runState) runParallel(ctx context.Context, wave []string) ([]string, error) {
	p := r.e.opts.Parallel
	if len(wave) > p.MaxBranches {
		return nil, fault.New(fault.BudgetExceeded, opExecute, "graph %q: a wave of %d nodes exceeds parallel.max_branches %d",
			r.e.doc.Name, len(wave), p.MaxBranches)
	}
	f := r.newFork(ctx, wave)
	defer func() {
		for _, b := range f.branches {
			b.stop()
			b.cancel(nil)
		}
	}()
	r.publishLogged(ctx, event.SubjectParallelFork(r.run.ID), event.ParallelPayload{ForkID: f.id, Branches: wave, Graph: r.e.doc.Name})
	r.runBranches(ctx, f)
	if b := f.failure(); b != nil {
		if errors.Is(b.err, fault.Interrupted) {
			r.mergeAssistant(f)
		}
		r.closeFork(ctx, f, wave, true)
		return nil, b.err
	}
	r.merge(f)
	return r.closeFork(ctx, f, wave, false), nil
}

// newFork makes the branches of wave, each on a copy of the pre-fork board.
func (r *runState) newFork(ctx context.Context, wave []string) *fork {
	f := &fork{id: fmt.Sprintf("%s#attempt-%d#iteration-%d#%s", r.run.ID, max(r.run.Attempt, 1), r.iterations, wave[0])}
	for _, id := range wave {
		b := &branch{node: r.e.nodes[id], board: r.board.Clone(), boardBytes: r.boardBytes, stop: func() {}}
		b.ctx, b.cancel = context.WithCancelCause(ctx)
		if t := r.e.opts.Parallel.BranchTimeout; t > 0 {
			b.timeout = fault.New(fault.Timeout, opExecute, "graph %q: node %q: parallel.branch_timeout of %s exceeded", r.e.doc.Name, id, t)
			b.ctx, b.stop = context.WithTimeoutCause(b.ctx, t, b.timeout)
		}
		f.branches = append(f.branches, b)
	}
	return f
}

// runBranches starts the branches in wave order, max_concurrency at a
// time, and waits for all of them.
func (r *runState) runBranches(ctx context.Context, f *fork) {
	limit := r.e.opts.Parallel.MaxConcurrency
	if limit <= 0 {
		limit = len(f.branches)
	}
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for _, b := range f.branches {
		acquired := true
		select {
		case slots <- struct{}{}:
		case <-ctx.Done(): // the branch sees its ctx ended and fails at once
			acquired = false
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if acquired {
				defer func() { <-slots }()
			}
			r.runBranch(f, b)
		}()
	}
	wg.Wait()
}

// runBranch runs one branch; a failure stops the siblings.
func (r *runState) runBranch(f *fork, b *branch) {
	var err error
	switch {
	case f.isCancelled(b.node.id):
		r.publishStep(b.ctx, stepComplete, b.node, event.StepPayload{Skipped: true})
	case b.ctx.Err() != nil:
		err = r.stepFailed(b.ctx, b.node, context.Cause(b.ctx))
	default:
		err = r.step(b.ctx, stepInput{node: b.node, board: b.board, fork: f, boardBytes: b.boardBytes})
	}
	var ne *NodeError
	if err != nil && b.timeout != nil && errors.Is(context.Cause(b.ctx), b.timeout) && errors.As(err, &ne) {
		ne.Err = fault.Wrap(fault.Timeout, ne.Err, "", "parallel.branch_timeout of %s exceeded", r.e.opts.Parallel.BranchTimeout)
	}
	f.mu.Lock()
	b.err = err
	failed := err != nil && !b.cancelled && !errors.Is(context.Cause(b.ctx), errSiblingFailed)
	f.mu.Unlock()
	if failed {
		f.failAll(b)
	}
}

// closeFork publishes the branches' terminals and the join: a cancel for
// each cancelled branch (every branch when the wave failed), then an
// accept for each other one, then parallel.join. It returns the accepted
// branches.
func (r *runState) closeFork(ctx context.Context, f *fork, wave []string, failed bool) []string {
	var accepted, cancelled []string
	for _, b := range f.branches {
		if failed || b.cancelled {
			cancelled = append(cancelled, b.node.id)
			r.publishBranchTerminal(ctx, f, b, event.DeltaParallelBranchCancel)
		}
	}
	for _, b := range f.branches {
		if !failed && !b.cancelled {
			accepted = append(accepted, b.node.id)
			r.publishBranchTerminal(ctx, f, b, event.DeltaParallelBranchAccept)
		}
	}
	r.publishLogged(ctx, event.SubjectParallelJoin(r.run.ID),
		event.ParallelPayload{ForkID: f.id, Branches: wave, Cancelled: cancelled, Graph: r.e.doc.Name})
	return accepted
}

// publishBranchTerminal publishes parallel_branch_accept or
// parallel_branch_cancel on the branch node's stream.
func (r *runState) publishBranchTerminal(ctx context.Context, f *fork, b *branch, t event.DeltaType) {
	d := event.StreamDeltaPayload{Type: t, ForkID: f.id, BranchID: b.node.id, Reason: b.reason}
	subject := event.SubjectStreamDelta(r.run.ID, event.Actor(r.run.AgentID, b.node.id))
	if err := r.publish(context.WithoutCancel(ctx), subject, d, b.node.id); err != nil {
		r.logger.WarnContext(ctx, "graph branch terminal not published", "graph", r.e.doc.Name, "run_id", r.run.ID,
			"fork_id", f.id, "branch", b.node.id, "type", t, "error", err)
	}
}

// publishLogged publishes a run event; a failure is only logged.
func (r *runState) publishLogged(ctx context.Context, subject string, payload any) {
	if err := r.publish(context.WithoutCancel(ctx), subject, payload, ""); err != nil {
		r.logger.WarnContext(ctx, "graph event not published", "graph", r.e.doc.Name, "run_id", r.run.ID,
			"subject", subject, "error", err)
	}
}
