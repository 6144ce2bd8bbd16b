package agent

import (
	"context"
	"errors"

	"github.com/corral-rt/corral/fault"
)

// judge asks every referee about res and merges their verdicts: Accept,
// Revise and Discard are or-ed, and the first non-empty reason is kept. The
// first error stops the judging.
func (x *execution) judge(ctx context.Context, run Run, res *Result) (Verdict, error) {
	var out Verdict
	for i, r := range x.referees {
		v, err := r.Judge(ctx, run, res)
		if err != nil {
			return out, fault.Wrap(fault.KindOr(err, fault.Internal), err, "execute", "agent %q: referee %d", x.agent.ID, i)
		}
		out.Accept = out.Accept || v.Accept
		out.Revise = out.Revise || v.Revise
		out.Discard = out.Discard || v.Discard
		if out.Reason == "" {
			out.Reason = v.Reason
		}
	}
	return out, nil
}

// applyVerdict applies a verdict that did not lead to a re-run.
func applyVerdict(res *Result, v Verdict) {
	if v.Reason != "" {
		res.State[StateRefereeReason] = v.Reason
	}
	switch {
	case v.Discard:
		res.Committed = false
		res.State[StateFinalizeReason] = FinalizeRefereeDiscard
	case v.Accept:
		res.Committed = true
		res.State[StateFinalizeReason] = FinalizeRefereeAccept
	case v.Revise && res.Status == StatusCompleted:
		res.State[StateFinalizeReason] = FinalizeReviseExhausted
	}
}

// refereeFailed records a referee error: the result is not committed, and
// a completed one becomes failed.
func (x *execution) refereeFailed(res *Result, err error) {
	if res.Status == StatusCompleted {
		res.Status = StatusFailed
	}
	res.Committed = false
	res.Err = errors.Join(res.Err, err)
	res.State[StateFinalizeReason] = FinalizeRefereeError
	res.State[StateRefereeError] = err.Error()
}

// commit runs the commit view and then the committers on a committed
// result. The first error leaves the result uncommitted.
func (x *execution) commit(ctx context.Context, run Run, res *Result) {
	if p := x.cfg.CommitView; !isNil(p) {
		if err := p.CommitView(ctx, run, res); err != nil {
			x.commitFailed(res, FinalizeCommitViewFailed, fault.Wrap(fault.KindOr(err, fault.Internal), err, "execute", "agent %q: commit view", x.agent.ID))
			return
		}
	}
	for i, c := range appendPresent(nil, x.agent.Committers) {
		if err := c.Commit(ctx, run, res); err != nil {
			x.commitFailed(res, FinalizeCommitFailed, fault.Wrap(fault.KindOr(err, fault.Internal), err, "execute", "agent %q: committer %d", x.agent.ID, i))
			return
		}
	}
}

func (x *execution) commitFailed(res *Result, reason string, err error) {
	res.Committed = false
	res.Err = errors.Join(res.Err, err)
	if res.State == nil { // a commit view may have replaced the map
		res.State = map[string]any{}
	}
	res.State[StateFinalizeReason] = reason
	res.State[StateCommitError] = err.Error()
}

// RunEndPublishError reports that an engine could not publish the run-end
// event of a run (REF 5.7.4). Engines join it to the error they
// return; it is of kind fault.Internal, and the session detaches the
// turn's sinks with it.
type RunEndPublishError struct {
	RunID string
	Err   error // the publish error; may be nil
}

func (e *RunEndPublishError) Error() string {
	if e.Err == nil {
		return "publish run end of " + e.RunID + ": failed"
	}
	return "publish run end of " + e.RunID + ": " + e.Err.Error()
}

// Unwrap makes errors.Is(err, fault.Internal) hold and exposes the cause.
func (e *RunEndPublishError) Unwrap() []error {
	if e.Err == nil {
		return []error{fault.Internal}
	}
	return []error{fault.Internal, e.Err}
}

type resumeKey struct{}

// ContextWithResume returns ctx carrying rc. Execute does this with the
// ExecuteConfig.ResumeContext, so the engine and the hooks of a resumed run
// can tell it from a fresh one.
func ContextWithResume(ctx context.Context, rc ResumeContext) context.Context {
	return context.WithValue(ctx, resumeKey{}, rc)
}

// ResumeFromContext returns the ResumeContext that ctx carries, if any.
func ResumeFromContext(ctx context.Context) (ResumeContext, bool) {
	if ctx == nil {
		return ResumeContext{}, false
	}
	rc, ok := ctx.Value(resumeKey{}).(ResumeContext)
	return rc, ok
}

// PreparerFunc adapts a function to a Preparer.
type PreparerFunc func(ctx context.Context, run Run, req Request, board *Board) error

// Prepare calls f.
func (f PreparerFunc) Prepare(ctx context.Context, run Run, req Request, board *Board) error {
	return f(ctx, run, req, board)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(ctx context.Context, run Run, board *Board)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, run Run, board *Board) { f(ctx, run, board) }

// RefereeFunc adapts a function to a Referee.
type RefereeFunc func(ctx context.Context, run Run, res *Result) (Verdict, error)

// Judge calls f.
func (f RefereeFunc) Judge(ctx context.Context, run Run, res *Result) (Verdict, error) {
	return f(ctx, run, res)
}

// CommitterFunc adapts a function to a Committer.
type CommitterFunc func(ctx context.Context, run Run, res *Result) error

// Commit calls f.
func (f CommitterFunc) Commit(ctx context.Context, run Run, res *Result) error {
	return f(ctx, run, res)
}

// CommitViewFunc adapts a function to a CommitViewProvider.
type CommitViewFunc func(ctx context.Context, run Run, res *Result) error

// CommitView calls f.
func (f CommitViewFunc) CommitView(ctx context.Context, run Run, res *Result) error {
	return f(ctx, run, res)
}

var (
	_ Preparer           = PreparerFunc(nil)
	_ Observer           = ObserverFunc(nil)
	_ Referee            = RefereeFunc(nil)
	_ Committer          = CommitterFunc(nil)
	_ CommitViewProvider = CommitViewFunc(nil)
)
