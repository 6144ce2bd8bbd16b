package agent

import (
	"context"
	"errors"
	"io"
	"slices"
)

// Agent is a bound agent: its definition with its engine and hooks built.
// Close closes what it owns, listed in Closers. Deploy appends the engine
// first and then each hook in build order, so Close closes the hooks in
// reverse order first and the engine last.
type Agent struct {
	ID         string
	Definition Definition
	Engine     Engine
	Preparers  []Preparer
	Observers  []Observer
	Referees   []Referee
	Committers []Committer
	// Closers are closed by Close in reverse order; deploy fills it, in
	// build order, with every built value that implements io.Closer.
	Closers []io.Closer
}

// Close closes a.Closers in reverse order, skipping nil and typed-nil
// entries, and returns their errors joined (nil when all succeed). Every
// closer is called even when an earlier one fails. Close is safe to call
// more than once only if the closers are; deploy closes each agent once.
func (a *Agent) Close() error {
	var errs []error
	for _, c := range slices.Backward(a.Closers) {
		if isNil(c) {
			continue
		}
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Preparer seeds the board before a run (slot "prepare").
type Preparer interface {
	Prepare(ctx context.Context, run Run, req Request, board *Board) error
}

// Observer sees the board before the engine runs (slot "observe").
type Observer interface {
	Observe(ctx context.Context, run Run, board *Board)
}

// Verdict is a referee's judgement of a result. The zero Verdict has no
// opinion. When several referees judge one result, Execute merges their
// verdicts: Revise wins while the revise budget lasts, then Discard wins
// over Accept.
type Verdict struct {
	Accept  bool   // keep the output even if the status would not commit it
	Revise  bool   // run the engine again (bounded by policy.max_revise)
	Discard bool   // drop the output: the result is not committed
	Reason  string // why
}

// Referee judges a run's result (slot "referee").
type Referee interface {
	Judge(ctx context.Context, run Run, res *Result) (Verdict, error)
}

// Committer persists or forwards a committed result (slot "commit").
type Committer interface {
	Commit(ctx context.Context, run Run, res *Result) error
}
