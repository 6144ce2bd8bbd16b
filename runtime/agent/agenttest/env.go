package agenttest

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// Env is what a step works with during one Execute call. It is used by one
// goroutine at a time: the engine's, or a Func step's.
type Env struct {
	engine    *Engine
	run       agent.Run
	host      agent.Host
	board     *agent.Board
	rec       *record
	step      int
	iteration int
}

// Run returns the run being executed.
func (v *Env) Run() agent.Run { return v.run }

// Host returns the host the engine was given.
func (v *Env) Host() agent.Host { return v.host }

// Board returns the live board.
func (v *Env) Board() *agent.Board { return v.board }

// SetBoard replaces the live board; Execute returns the last one set. A nil
// board is ignored.
func (v *Env) SetBoard(b *agent.Board) {
	if b != nil {
		v.board = b
	}
}

// Step returns the index of the step being run.
func (v *Env) Step() int { return v.step }

// Actor returns the actor of the engine's stream deltas:
// event.Actor(agentID, engine name).
func (v *Env) Actor() string { return event.Actor(v.run.AgentID, v.engine.name) }

// Emit publishes d on agent.run.<run>.stream.<actor>.delta with the
// run_id, agent_id and node_id headers (and parent_run_id when the run has
// a parent). d is not validated, so a test can send deltas that break the
// stream protocol on purpose.
func (v *Env) Emit(ctx context.Context, d event.StreamDeltaPayload) error {
	env, err := event.NewEnvelope(ctx, event.SubjectStreamDelta(v.run.ID, v.Actor()), d)
	if err != nil {
		return err
	}
	env.Headers = v.headers()
	env.Headers[event.HeaderNodeID] = v.engine.name
	return v.host.Publish(ctx, env)
}

// Publish publishes payload on agent.run.<run>.<suffix> with the run
// headers. An invalid subject is event.ErrInvalidSubject.
func (v *Env) Publish(ctx context.Context, suffix string, payload any) error {
	env, err := event.NewEnvelope(ctx, event.SubjectPrefixRun+event.SanitiseID(v.run.ID)+"."+suffix, payload)
	if err != nil {
		return err
	}
	env.Headers = v.headers()
	return v.host.Publish(ctx, env)
}

// Checkpoint saves a checkpoint of the live board from which a resumed run
// starts at step next (VarStep on the checkpoint's copy of the board). The
// iteration counts up from the resumed checkpoint's. A host error is
// recorded in RunRecord.CheckpointErrors and returned.
func (v *Env) Checkpoint(ctx context.Context, next int) error {
	v.iteration++
	b := v.board.Clone()
	b.Vars[VarStep] = next
	cp := agent.Checkpoint{
		ExecID:            v.run.ID,
		Steps:             []string{fmt.Sprintf("step-%d", next-1)},
		Iteration:         v.iteration,
		Board:             b,
		Timestamp:         time.Now(),
		OriginalStartedAt: v.run.StartedAt,
		SpecVersion:       v.engine.name,
	}
	if err := v.host.Checkpoint(ctx, cp); err != nil {
		v.rec.update(func(r *RunRecord) { r.CheckpointErrors = append(r.CheckpointErrors, err) })
		return err
	}
	v.rec.update(func(r *RunRecord) { r.Checkpoints = append(r.Checkpoints, cp.Clone()) })
	return nil
}

// Reply appends an assistant message with text to the main channel.
func (v *Env) Reply(text string) {
	v.board.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, text))
}

func (v *Env) headers() map[string]string {
	h := map[string]string{event.HeaderRunID: v.run.ID, event.HeaderAgentID: v.run.AgentID}
	if v.run.ParentRunID != "" {
		h[event.HeaderParentRunID] = v.run.ParentRunID
	}
	return h
}

// publishRun publishes a run start or end with the run_id, agent_id and
// graph_id headers (REF 5.7.3).
func (v *Env) publishRun(ctx context.Context, subject string, p event.RunPayload) error {
	env, err := event.NewEnvelope(ctx, subject, p)
	if err != nil {
		return err
	}
	env.Headers = v.headers()
	env.Headers[event.HeaderGraphID] = v.engine.name
	return v.host.Publish(ctx, env)
}

// interrupted records intr, saves a checkpoint that resumes after the
// current step, and returns the Interrupted error.
func (v *Env) interrupted(ctx context.Context, intr agent.Interrupt) error {
	v.rec.update(func(r *RunRecord) { r.Interrupts = append(r.Interrupts, intr) })
	_ = v.Checkpoint(ctx, v.step+1) // recorded; a failed checkpoint does not change the outcome
	return agent.Interrupted(intr)
}
