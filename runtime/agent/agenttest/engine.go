package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// Board variables the engine uses.
const (
	// VarStep holds, on the board of every checkpoint the engine saves,
	// the index of the step a resumed run starts at. It is written on the
	// checkpoint's copy only, never on the live board.
	VarStep = "agenttest.step"
	// VarReply receives the text of the user's reply to AskUser.
	VarReply = "agenttest.reply"
)

// DefaultName is the engine's name unless WithName changes it: the graph
// field of the run payloads, the graph_id header, the node of the stream
// actor and the SpecVersion of its checkpoints.
const DefaultName = "agenttest"

// RunEndTimeout bounds the publish of the run-end event, on a ctx detached
// from the run's cancellation (REF 5.7.2).
const RunEndTimeout = 5 * time.Second

// Script returns the steps of one Execute call. call counts the engine's
// Execute calls from 1; run is the run being executed.
type Script func(call int, run agent.Run) []Step

// Engine is an agent.Engine that runs a scripted list of steps. Create one
// with New or NewScript; the With methods return configured copies that
// share the script but record their own runs. An Engine is safe for
// concurrent use: each Execute runs its own steps and record.
type Engine struct {
	script   Script
	name     string
	skipEnd  bool
	endErr   error
	recorder *recorder
}

var _ agent.Engine = (*Engine)(nil)

// New returns an engine that runs steps on every Execute call.
func New(steps ...Step) *Engine {
	return NewScript(func(int, agent.Run) []Step { return steps })
}

// NewScript returns an engine that asks script for the steps of each
// Execute call. A nil script runs no step.
func NewScript(script Script) *Engine {
	if script == nil {
		script = func(int, agent.Run) []Step { return nil }
	}
	return &Engine{script: script, name: DefaultName, recorder: &recorder{}}
}

// WithName returns a copy of e named name (see DefaultName). An empty name
// keeps DefaultName.
func (e *Engine) WithName(name string) *Engine {
	c := e.clone()
	if name != "" {
		c.name = name
	}
	return c
}

// WithoutRunEnd returns a copy of e that never publishes the run-end
// event, as a broken engine would; the session then waits out its finalize
// budget.
func (e *Engine) WithoutRunEnd() *Engine {
	c := e.clone()
	c.skipEnd = true
	return c
}

// WithRunEndFailure returns a copy of e whose run-end publish fails with
// cause (nothing is published): Execute returns its error joined with an
// *agent.RunEndPublishError, as a real engine does when the bus refuses the
// run-end (REF 5.7.4).
func (e *Engine) WithRunEndFailure(cause error) *Engine {
	c := e.clone()
	if cause == nil {
		cause = fault.New(fault.NotAvailable, "publish", "run end refused")
	}
	c.endErr = cause
	return c
}

func (e *Engine) clone() *Engine {
	c := *e
	c.recorder = &recorder{}
	return &c
}

// Name returns the engine's name.
func (e *Engine) Name() string { return e.name }

// Runs returns a copy of what every Execute call saw, in call order. A run
// that is still going has Done false.
func (e *Engine) Runs() []RunRecord { return e.recorder.snapshot() }

// Execute runs the script. It publishes agent.run.<run>.start first and
// agent.run.<run>.end exactly once when it returns, whatever the outcome,
// from a deferred function whose ctx is detached from ctx's cancellation
// and bounded by RunEndTimeout. Before each step it returns ctx's error if
// ctx has ended. A resumed run (run.ResumeFrom set) starts from a copy of
// the checkpoint's board at the step index in its VarStep variable; a
// checkpoint of another run, or without a valid index, fails the run with
// a Validation error. A nil board is an empty one; a nil host is a
// Validation error (and nothing is published).
func (e *Engine) Execute(ctx context.Context, run agent.Run, host agent.Host, board *agent.Board) (_ *agent.Board, err error) {
	if agent.IsNil(host) {
		return board, fault.New(fault.Validation, "agenttest", "run %q: host must not be nil", run.ID)
	}
	if board == nil {
		board = agent.NewBoard()
	}
	call, rec := e.recorder.begin(run)
	steps := e.script(call, run)
	env := &Env{engine: e, run: run, host: host, board: board, rec: rec}
	if err := env.publishRun(ctx, event.SubjectRunStart(run.ID), event.RunPayload{Graph: e.name}); err != nil {
		rec.update(func(r *RunRecord) { r.PublishErrors = append(r.PublishErrors, err) })
	}
	defer func() {
		err = e.endRun(ctx, env, err)
		rec.finish(env.board, err)
	}()
	start, err := env.resume(len(steps))
	if err != nil {
		return env.board, err
	}
	for i := start; i < len(steps); i++ {
		if err := ctx.Err(); err != nil {
			return env.board, err
		}
		env.step = i
		rec.addStep(steps[i].Name())
		if err := steps[i].run(ctx, env); err != nil {
			return env.board, err
		}
	}
	return env.board, nil
}

// endRun publishes the run end and joins a publish failure to runErr.
func (e *Engine) endRun(ctx context.Context, env *Env, runErr error) error {
	if e.skipEnd {
		return runErr
	}
	if e.endErr != nil {
		return errors.Join(runErr, &agent.RunEndPublishError{RunID: env.run.ID, Err: e.endErr})
	}
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RunEndTimeout)
	defer cancel()
	payload := event.RunPayload{Graph: e.name}
	if runErr != nil {
		payload.Error = runErr.Error()
	}
	if err := env.publishRun(endCtx, event.SubjectRunEnd(env.run.ID), payload); err != nil {
		return errors.Join(runErr, &agent.RunEndPublishError{RunID: env.run.ID, Err: err})
	}
	return runErr
}

// resume prepares a resumed run and returns the step it starts at.
func (v *Env) resume(steps int) (int, error) {
	cp := v.run.ResumeFrom
	if cp == nil {
		return 0, nil
	}
	bad := func(format string, args ...any) error {
		return fault.New(fault.Validation, "agenttest", "resume run %q: "+format, append([]any{v.run.ID}, args...)...)
	}
	switch {
	case cp.ExecID != v.run.ID:
		return 0, bad("checkpoint belongs to run %q", cp.ExecID)
	case cp.Board == nil:
		return 0, bad("checkpoint has no board")
	}
	step, ok := intValue(cp.Board.Vars[VarStep])
	if !ok || step < 0 || step > steps {
		return 0, bad("%s = %v is not a step index in [0, %d]", VarStep, cp.Board.Vars[VarStep], steps)
	}
	v.board = cp.Board.Clone()
	delete(v.board.Vars, VarStep)
	v.iteration = cp.Iteration
	v.rec.resumed(step)
	return step, nil
}

// intValue reads an integer that may have gone through JSON.
func intValue(x any) (int, bool) {
	switch n := x.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n != math.Trunc(n) || n > math.MaxInt32 || n < math.MinInt32 {
			return 0, false
		}
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// recorder keeps the records of an engine's runs.
type recorder struct {
	mu   sync.Mutex
	runs []*record
}

func (r *recorder) begin(run agent.Run) (int, *record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := &record{mu: &r.mu, RunRecord: RunRecord{Call: len(r.runs) + 1, Run: cloneRun(run)}}
	r.runs = append(r.runs, rec)
	return rec.Call, rec
}

func (r *recorder) snapshot() []RunRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RunRecord, len(r.runs))
	for i, rec := range r.runs {
		out[i] = rec.RunRecord.clone()
	}
	return out
}
