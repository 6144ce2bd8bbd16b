package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
)

// The Result.State keys that Execute writes.
const (
	// StateFinalizeReason says why the result is (or is not) committed:
	// one of the Finalize* values.
	StateFinalizeReason = "finalize_reason"
	// StateRefereeReason is the first non-empty Verdict.Reason of the
	// referees that judged the final attempt.
	StateRefereeReason = "referee_reason"
	// StateRefereeError is the text of a referee's error.
	StateRefereeError = "referee_error"
	// StateCommitError is the text of a commit view's or committer's error.
	StateCommitError = "commit_error"
)

// The values of State["finalize_reason"]. When no referee or committer
// changed the outcome, the reason is the status itself (FinalizeCompleted,
// FinalizeInterrupted, ...).
const (
	FinalizeCompleted        = string(StatusCompleted)
	FinalizeInterrupted      = string(StatusInterrupted)
	FinalizeCanceled         = string(StatusCanceled)
	FinalizeFailed           = string(StatusFailed)
	FinalizeAborted          = string(StatusAborted)
	FinalizeRefereeAccept    = "referee_accept"     // a referee accepted the output
	FinalizeRefereeDiscard   = "referee_discard"    // a referee discarded the output
	FinalizeRefereeError     = "referee_error"      // a referee failed
	FinalizeReviseExhausted  = "revise_exhausted"   // a revise was asked for with no budget left
	FinalizeCommitViewFailed = "commit_view_failed" // the commit view failed
	FinalizeCommitFailed     = "commit_failed"      // a committer failed
)

// Execute runs one turn of agent a: it mints the run id, seeds the board,
// calls the observers, runs the engine, classifies the outcome, lets the
// referees judge it (re-running the engine when one asks to revise),
// applies the commit view and the committers, and finally calls the
// OnRunEnd callback of the ExecuteConfig (see ExecuteWithConfig).
//
// Run id: req.RunID when set, else the resume checkpoint's exec id, else
// one from ExecuteConfig.NewRunID, else NewRunID. A resume whose checkpoint
// belongs to another run is refused.
//
// Board: on a resume (ExecuteConfig.ResumeFrom) the first attempt starts from a copy
// of the checkpoint's board and the engine gets the checkpoint in
// Run.ResumeFrom; otherwise, and on every revise attempt, the agent's
// Preparers build the board from an empty one, in order, or, when the
// agent has none, DefaultPreparer does (req.Message appended to
// MainChannel, req.Inputs copied into Vars). The Observers then see the
// board, in order; they must not change it.
//
// Classification of the engine's error: nil is completed; fault.Interrupted
// is interrupted; context.Canceled (in the error, or as ctx's own error) is
// canceled; fault.Aborted is aborted; anything else (a Timeout, a
// BudgetExceeded, a context.DeadlineExceeded, ...) is failed. Result.Err
// holds the engine's error for every status but completed.
//
// Referees (the agent's, then ExecuteConfig.Referees) judge every attempt,
// all of them, in order; their verdicts are merged. Revise re-runs the
// engine when the attempt completed, ctx is alive and fewer than
// policy.max_revise re-runs were made (Result.Attempts counts engine
// runs); a revise asked for without budget leaves the result as it is with
// finalize_reason revise_exhausted. Otherwise Discard leaves the result
// uncommitted and Accept commits it whatever its status. A referee error
// stops the judging: the result is not committed, the error is joined into
// Result.Err and recorded under State["referee_error"], and a completed
// result becomes failed (its output was never judged); other statuses are
// kept, so a canceled run whose referee saw the dead ctx stays canceled.
//
// Committed defaults to true for completed results only. A committed
// result goes through the commit view (ExecuteConfig.CommitView), which may rewrite
// it, and then through the agent's Committers in order. An error in either
// stops there, leaves the result uncommitted, keeps its status, joins the
// error into Result.Err and records it under State["commit_error"].
// State["finalize_reason"] says why the result ended as it did.
//
// Result.Output is a copy of the assistant messages that the final attempt
// appended to MainChannel (messages past the length the main channel had
// when the engine started; on a resume that is the checkpoint's board).
// Result.LastBoard is the board the engine returned (the board it was given
// when it returned nil). Result.Usage is the sum of what the engines
// reported through Host.ReportUsage over every attempt: Execute hands the
// engine a HostFuncs decorator of host that counts usage and passes every
// call on, so the capabilities of host stay reachable with
// CapabilityFromHost.
//
// Business outcomes return (res, nil). Infrastructure failures return
// (nil, err): a nil ctx, agent or host, an agent without an engine, an
// invalid request message (a zero message is allowed and means "no
// message"), an invalid or foreign resume checkpoint (all Validation), a
// failing preparer (its kind, else Internal) or a run id generator that
// returns "" (Internal). The OnRunEnd callback runs only when there is
// a result.
func Execute(ctx context.Context, a *Agent, host Host, req Request) (*Result, error) {
	return ExecuteWithConfig(ctx, a, host, req, ExecuteConfig{})
}

// ExecuteWithConfig is Execute configured by cfg (see ExecuteConfig).
func ExecuteWithConfig(ctx context.Context, a *Agent, host Host, req Request, cfg ExecuteConfig) (*Result, error) {
	x, err := newExecution(ctx, a, host, req, cfg)
	if err != nil {
		return nil, err
	}
	if x.cfg.ResumeContext != nil {
		ctx = ContextWithResume(ctx, *x.cfg.ResumeContext)
	}
	res, err := x.run(ctx)
	if err != nil {
		return nil, err
	}
	if x.cfg.OnRunEnd != nil {
		x.cfg.OnRunEnd(res)
	}
	return res, nil
}

// NewRunID returns a new run id: "run-" followed by 16 lowercase hex
// characters from crypto/rand.
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "run-" + hex.EncodeToString(b[:])
}

// execution is one Execute call after its checks.
type execution struct {
	agent     *Agent
	engine    Engine
	host      Host // host wrapped by the usage meter
	req       Request
	cfg       ExecuteConfig
	base      Run // the identity every attempt shares
	referees  []Referee
	maxRevise int
	usage     usageMeter
}

func newExecution(ctx context.Context, a *Agent, host Host, req Request, cfg ExecuteConfig) (*execution, error) {
	switch {
	case ctx == nil:
		return nil, fault.New(fault.Validation, "execute", "ctx must not be nil")
	case a == nil:
		return nil, fault.New(fault.Validation, "execute", "agent must not be nil")
	case isNil(host):
		return nil, fault.New(fault.Validation, "execute", "agent %q: host must not be nil", a.ID)
	}
	cfg = cfg.owned()
	x := &execution{agent: a, engine: cfg.Engine, cfg: cfg, req: req.Clone(), maxRevise: max(a.Definition.Policy.MaxRevise, 0)}
	if isNil(x.engine) {
		x.engine = a.Engine
	}
	if isNil(x.engine) {
		return nil, fault.New(fault.Validation, "execute", "agent %q has no engine", a.ID)
	}
	if !isZeroMessage(req.Message) {
		if err := req.Message.Validate(); err != nil {
			return nil, fault.Wrap(fault.Validation, err, "execute", "agent %q: request", a.ID)
		}
	}
	runID, err := x.runID()
	if err != nil {
		return nil, err
	}
	x.req.RunID = runID
	x.base = Run{ID: runID, AgentID: a.ID, ContextID: req.ContextID, Tenant: a.Definition.TenantID(),
		ParentRunID: cfg.ParentRunID, StartedAt: x.startedAt(),
		Capabilities: slices.Clone(a.Definition.Capabilities)}
	x.host = x.usage.wrap(host)
	x.referees = appendPresent(appendPresent(nil, a.Referees), cfg.Referees)
	return x, nil
}

// runID picks the run id and checks the resume checkpoint against it.
func (x *execution) runID() (string, error) {
	cp := x.cfg.ResumeFrom
	if cp != nil {
		if err := cp.Validate(); err != nil {
			return "", fault.Wrap(fault.Validation, err, "execute", "agent %q: resume", x.agent.ID)
		}
	}
	id := x.req.RunID
	switch {
	case id != "":
	case cp != nil:
		id = cp.ExecID
	case x.cfg.NewRunID != nil:
		id = x.cfg.NewRunID()
		if strings.TrimSpace(id) == "" {
			return "", fault.New(fault.Internal, "execute", "agent %q: the run id generator returned an empty id", x.agent.ID)
		}
	default:
		id = NewRunID()
	}
	if cp != nil && cp.ExecID != id {
		return "", fault.New(fault.Validation, "execute",
			"agent %q: checkpoint %q does not belong to run %q (forking needs a fresh run)", x.agent.ID, cp.ExecID, id)
	}
	return id, nil
}

// startedAt is when the logical run started: the original start of a
// resumed run when known, else now.
func (x *execution) startedAt() time.Time {
	switch {
	case x.cfg.ResumeContext != nil && !x.cfg.ResumeContext.StartedAt.IsZero():
		return x.cfg.ResumeContext.StartedAt
	case x.cfg.ResumeFrom != nil && !x.cfg.ResumeFrom.OriginalStartedAt.IsZero():
		return x.cfg.ResumeFrom.OriginalStartedAt
	}
	return time.Now()
}

// run runs the attempts and finalizes the last one.
func (x *execution) run(ctx context.Context) (*Result, error) {
	for attempt := 1; ; attempt++ {
		run, res, err := x.attempt(ctx, attempt)
		if err != nil {
			return nil, err
		}
		v, err := x.judge(ctx, run, res)
		if err != nil {
			x.refereeFailed(res, err)
			return x.finish(res), nil
		}
		if v.Revise && res.Status == StatusCompleted && ctx.Err() == nil && attempt <= x.maxRevise {
			continue
		}
		applyVerdict(res, v)
		if res.Committed {
			x.commit(ctx, run, res)
		}
		return x.finish(res), nil
	}
}

func (x *execution) finish(res *Result) *Result {
	res.Usage = x.usage.total()
	return res
}

// attempt seeds a board and runs the engine once.
func (x *execution) attempt(ctx context.Context, n int) (Run, *Result, error) {
	run := x.base
	run.Attempt = n
	if n == 1 && x.cfg.ResumeFrom != nil {
		cp := x.cfg.ResumeFrom.Clone()
		run.ResumeFrom = &cp
	}
	board, err := x.seed(ctx, run)
	if err != nil {
		return run, nil, err
	}
	for _, o := range x.agent.Observers {
		if !isNil(o) {
			o.Observe(ctx, run, board)
		}
	}
	seeded := len(board.Channel(MainChannel))
	final, runErr := x.engine.Execute(ctx, run, x.host, board)
	if final == nil {
		final = board
	}
	res := &Result{RunID: run.ID, LastBoard: final, Attempts: n, Output: appendedAssistant(final, seeded)}
	res.Status = classify(ctx, runErr)
	if res.Status != StatusCompleted {
		res.Err = runErr
	}
	res.Committed = res.Status == StatusCompleted
	res.State = map[string]any{StateFinalizeReason: string(res.Status)}
	return run, res, nil
}

// seed builds the board of one attempt.
func (x *execution) seed(ctx context.Context, run Run) (*Board, error) {
	if run.ResumeFrom != nil {
		return run.ResumeFrom.Board.Clone(), nil
	}
	board := NewBoard()
	if x.cfg.History != nil {
		board = x.cfg.History.Clone()
	}
	preparers := appendPresent(nil, x.agent.Preparers)
	if len(preparers) == 0 {
		preparers = []Preparer{DefaultPreparer{}}
	}
	for i, p := range preparers {
		if err := p.Prepare(ctx, run, x.req.Clone(), board); err != nil {
			return nil, fault.Wrap(fault.KindOr(err, fault.Internal), err, "execute", "agent %q: preparer %d", x.agent.ID, i)
		}
	}
	if board.Vars == nil {
		board.Vars = map[string]any{}
	}
	return board, nil
}

// classify turns the engine's error into a status.
func classify(ctx context.Context, err error) Status {
	switch {
	case err == nil:
		return StatusCompleted
	case errors.Is(err, fault.Interrupted):
		return StatusInterrupted
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return StatusCanceled
	case errors.Is(err, fault.Aborted):
		return StatusAborted
	}
	return StatusFailed
}

// appendedAssistant returns copies of the assistant messages of b's main
// channel past index from.
func appendedAssistant(b *Board, from int) []message.Message {
	main := b.Channel(MainChannel)
	if from > len(main) {
		from = len(main)
	}
	var out []message.Message
	for _, m := range main[from:] {
		if m.Role == message.RoleAssistant {
			out = append(out, m.Clone())
		}
	}
	return out
}

// DefaultPreparer is the board seeding Execute uses for an agent without
// preparers: it appends the request message (unless it is the zero
// message) to MainChannel and copies the request inputs into Vars. A
// preparer that wants the default seeding plus more can call it first.
type DefaultPreparer struct{}

var _ Preparer = DefaultPreparer{}

// Prepare seeds board from req.
func (DefaultPreparer) Prepare(_ context.Context, _ Run, req Request, board *Board) error {
	if board == nil {
		return fault.New(fault.Internal, "prepare", "board must not be nil")
	}
	if !isZeroMessage(req.Message) {
		board.Append(MainChannel, req.Message.Clone())
	}
	if board.Vars == nil {
		board.Vars = map[string]any{}
	}
	for k, v := range req.Inputs {
		board.Vars[k] = cloneValue(v)
	}
	return nil
}

// isZeroMessage reports whether m is the zero message: a request without
// one.
func isZeroMessage(m message.Message) bool {
	return m.Role == "" && len(m.Parts) == 0 && m.Name == "" && len(m.Metadata) == 0
}

// appendPresent appends the non-nil entries of add to dst.
func appendPresent[T any](dst []T, add []T) []T {
	for _, v := range add {
		if !isNil(v) {
			dst = append(dst, v)
		}
	}
	return dst
}
