package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

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

// runTime is the run's run_time: the smallest RunTime of the engine's
// limits and of every bound runtime that tells its limits; 0 means none.
func (r *runState) runTime() time.Duration {
	d := r.e.opts.Limits.RunTime
	for _, rt := range r.e.opts.Runtimes {
		lr, ok := rt.(LimitedRuntime)
		if !ok {
			continue
		}
		if lt := lr.Limits().RunTime; lt > 0 && (d == 0 || lt < d) {
			d = lt
		}
	}
	return d
}

// maxBoardBytes is the run's max_board_bytes: the smallest of the
// engine's limits and the bound runtimes', else the default. It is
// computed at the run's first wave.
func (r *runState) maxBoardBytes() int64 {
	if r.maxBoard > 0 {
		return r.maxBoard
	}
	l := sandbox.Limits{MaxBoardBytes: r.e.opts.Limits.MaxBoardBytes}
	for _, rt := range r.e.opts.Runtimes {
		if lr, ok := rt.(LimitedRuntime); ok {
			l = l.Tighten(sandbox.Limits{MaxBoardBytes: lr.Limits().MaxBoardBytes})
		}
	}
	r.maxBoard = l.MaxBoardBytes
	if r.maxBoard == 0 {
		r.maxBoard = sandbox.DefaultMaxBoardBytes
	}
	return r.maxBoard
}

// checkBoard refuses a board past max_board_bytes at a wave boundary,
// before the checkpoint: the LimitError names the wave's node, or the
// graph for a wave of several. The board is measured unless the wave's
// last node reported its size (a script node: the runner counted every
// write, sandbox.Invocation.BoardBytesAfter).
func (r *runState) checkBoard(wave []string) error {
	max := r.maxBoardBytes()
	size := r.boardBytes
	r.boardBytes = 0
	if size <= 0 {
		var err error
		if size, err = sandbox.BoardJSONBytes(r.board); err != nil {
			return fault.Wrap(fault.Internal, err, opExecute, "graph %q: measure the board", r.e.doc.Name)
		}
	}
	if size <= max {
		r.boardBytes = size
		return nil
	}
	le := &sandbox.LimitError{Limit: sandbox.LimitBoardBytes, Node: r.e.doc.Name, Max: max}
	if len(wave) == 1 {
		le.Node = wave[0]
	}
	return fault.Wrap(fault.BudgetExceeded, le, opExecute, "graph %q: board of %d bytes after the wave of %s",
		r.e.doc.Name, size, strings.Join(wave, ", "))
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
