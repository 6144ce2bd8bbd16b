package graph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
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
		_, err = r.step(b.ctx, stepInput{node: b.node, board: b.board, fork: f, boardBytes: b.boardBytes})
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

// varChange is a branch's write of one var relative to the pre-fork
// board: a new value, or a deletion.
type varChange struct {
	key     string
	value   any
	deleted bool
}

// channelChange is what a branch did to one channel: appended messages
// after the pre-fork ones, or replaced the channel (removed it when the
// branch no longer has it).
type channelChange struct {
	appended []message.Message
	replaced bool
	removed  bool
	value    []message.Message // the replacement
}

// merge folds the accepted branches into the run's board (REF
// 5.6.6): var changes relative to the pre-fork board under the merge
// strategy, and new channel messages appended in wave order. A branch that
// rewrote a channel (not a pure append) replaces it under the merge
// strategy, and the other branches' appends follow.
func (r *runState) merge(f *fork) {
	first := r.e.opts.Parallel.MergeStrategy == FirstWriteWins
	pre := r.board
	var varChanges [][]varChange
	var chanChanges []map[string]channelChange
	for _, b := range f.branches {
		if !b.cancelled {
			varChanges = append(varChanges, diffVars(pre.Vars, b.board.Vars))
			chanChanges = append(chanChanges, diffChannels(pre.Channels, b.board.Channels))
		}
	}
	written := map[string]bool{}
	for _, changes := range varChanges {
		for _, c := range changes {
			if first && written[c.key] {
				continue
			}
			written[c.key] = true
			if c.deleted {
				delete(pre.Vars, c.key)
			} else {
				pre.Vars[c.key] = c.value
			}
		}
	}
	applyChannels(pre, chanChanges, first)
}

// mergeAssistant appends, for the record, the assistant messages every
// branch appended to its channels, in wave order (an interrupted wave is
// not merged otherwise).
func (r *runState) mergeAssistant(f *fork) {
	for _, b := range f.branches {
		changes := diffChannels(r.board.Channels, b.board.Channels)
		for _, name := range slices.Sorted(maps.Keys(changes)) {
			for _, m := range changes[name].appended {
				if m.Role == message.RoleAssistant {
					r.board.Append(name, m)
				}
			}
		}
	}
}

// diffVars lists post's changes relative to pre, by key.
func diffVars(pre, post map[string]any) []varChange {
	var out []varChange
	for _, k := range slices.Sorted(maps.Keys(post)) {
		if v, ok := pre[k]; !ok || !reflect.DeepEqual(v, post[k]) {
			out = append(out, varChange{key: k, value: post[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(pre)) {
		if _, ok := post[k]; !ok {
			out = append(out, varChange{key: k, deleted: true})
		}
	}
	return out
}

// diffChannels tells, per changed channel, what post did relative to pre.
func diffChannels(pre, post map[string][]message.Message) map[string]channelChange {
	out := map[string]channelChange{}
	for name, msgs := range post {
		old := pre[name]
		if len(msgs) >= len(old) && reflect.DeepEqual(normal(old), normal(msgs[:len(old)])) {
			if len(msgs) > len(old) {
				out[name] = channelChange{appended: msgs[len(old):]}
			}
			continue
		}
		out[name] = channelChange{replaced: true, value: msgs}
	}
	for name := range pre {
		if _, ok := post[name]; !ok {
			out[name] = channelChange{replaced: true, removed: true}
		}
	}
	return out
}

// normal makes an empty slice compare equal to nil.
func normal(msgs []message.Message) []message.Message {
	if len(msgs) == 0 {
		return nil
	}
	return msgs
}

// applyChannels applies the branches' channel changes to board: the
// replacement the merge strategy picks, then every append in wave order.
func applyChannels(board *agent.Board, changes []map[string]channelChange, first bool) {
	names := map[string]bool{}
	for _, m := range changes {
		for name := range m {
			names[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		msgs, present := board.Channels[name]
		replaced := false
		for _, m := range changes {
			c, ok := m[name]
			if !ok || !c.replaced || (first && replaced) {
				continue
			}
			replaced, msgs, present = true, c.value, !c.removed
		}
		for _, m := range changes {
			if c, ok := m[name]; ok && !c.replaced {
				msgs, present = append(msgs, c.appended...), true
			}
		}
		if present {
			board.Channels[name] = msgs
		} else {
			delete(board.Channels, name)
		}
	}
}
