package agenttest

import (
	"context"
	"errors"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// Step is one scripted action of an Engine. Make steps with the functions
// of this package; the zero Step does nothing.
type Step struct {
	name string
	fn   func(ctx context.Context, env *Env) error
}

// Name returns the step's name, as recorded in RunRecord.Steps ("emit",
// "reply", "wait_interrupt", ...).
func (s Step) Name() string { return s.name }

func (s Step) run(ctx context.Context, env *Env) error {
	if s.fn == nil {
		return nil
	}
	return s.fn(ctx, env)
}

// Func runs fn: anything the other steps do not cover. Its error ends the
// run with that error.
func Func(fn func(ctx context.Context, env *Env) error) Step {
	return Step{name: "func", fn: fn}
}

// Emit publishes a stream delta of type part with a text part.
func Emit(text string) Step {
	return Step{name: "emit", fn: func(ctx context.Context, env *Env) error {
		return env.Emit(ctx, textDelta(text))
	}}
}

// EmitDelta publishes d as it is (see Env.Emit).
func EmitDelta(d event.StreamDeltaPayload) Step {
	return Step{name: "emit_delta", fn: func(ctx context.Context, env *Env) error { return env.Emit(ctx, d) }}
}

// Speculative publishes a speculative text delta of branch branchID of
// fork forkID.
func Speculative(forkID, branchID, text string) Step {
	d := textDelta(text)
	d.Speculative, d.ForkID, d.BranchID = true, forkID, branchID
	return Step{name: "speculative", fn: func(ctx context.Context, env *Env) error { return env.Emit(ctx, d) }}
}

// AcceptBranch publishes the parallel_branch_accept control delta.
func AcceptBranch(forkID, branchID string) Step {
	d := event.StreamDeltaPayload{Type: event.DeltaParallelBranchAccept, ForkID: forkID, BranchID: branchID}
	return Step{name: "accept_branch", fn: func(ctx context.Context, env *Env) error { return env.Emit(ctx, d) }}
}

// CancelBranch publishes the parallel_branch_cancel control delta.
func CancelBranch(forkID, branchID string) Step {
	d := event.StreamDeltaPayload{Type: event.DeltaParallelBranchCancel, ForkID: forkID, BranchID: branchID}
	return Step{name: "cancel_branch", fn: func(ctx context.Context, env *Env) error { return env.Emit(ctx, d) }}
}

// Publish publishes payload on agent.run.<run>.<suffix>, for example
// Publish("custom.progress", map[string]any{"pct": 50}).
func Publish(suffix string, payload any) Step {
	return Step{name: "publish", fn: func(ctx context.Context, env *Env) error {
		return env.Publish(ctx, suffix, payload)
	}}
}

// Reply appends an assistant message with text to the main channel.
func Reply(text string) Step {
	return Step{name: "reply", fn: func(_ context.Context, env *Env) error {
		env.Reply(text)
		return nil
	}}
}

// Say emits text as one delta and then appends it as an assistant message,
// like a model call that streams its answer.
func Say(text string) Step {
	return Step{name: "say", fn: func(ctx context.Context, env *Env) error {
		if err := env.Emit(ctx, textDelta(text)); err != nil {
			return err
		}
		env.Reply(text)
		return nil
	}}
}

// SetVar sets board variable key to value.
func SetVar(key string, value any) Step {
	return Step{name: "set_var", fn: func(_ context.Context, env *Env) error {
		env.board.Vars[key] = value
		return nil
	}}
}

// WaitInterrupt blocks until the host's interrupt channel delivers an
// interrupt, then saves a checkpoint that resumes at the next step and
// returns agent.Interrupted(intr). It returns ctx's error when ctx ends
// first. A nil or closed interrupt channel never fires.
func WaitInterrupt() Step {
	return Step{name: "wait_interrupt", fn: func(ctx context.Context, env *Env) error {
		ch := env.host.Interrupts()
		for {
			select {
			case intr, ok := <-ch:
				if !ok {
					ch = nil
					continue
				}
				return env.interrupted(ctx, intr)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}}
}

// PollInterrupt checks the host's interrupt channel without blocking; when
// an interrupt is there it acts as WaitInterrupt does, otherwise the run
// goes on.
func PollInterrupt() Step {
	return Step{name: "poll_interrupt", fn: func(ctx context.Context, env *Env) error {
		select {
		case intr, ok := <-env.host.Interrupts():
			if ok {
				return env.interrupted(ctx, intr)
			}
		default:
		}
		return nil
	}}
}

// DrainSteer drains the turn's steer queue (agent.SteerFromHost), appends
// the messages to the main channel and records them. A host without a
// steer source drains nothing.
func DrainSteer() Step {
	return Step{name: "drain_steer", fn: func(_ context.Context, env *Env) error {
		src, ok := agent.SteerFromHost(env.host)
		if !ok {
			return nil
		}
		msgs := src.DrainSteer()
		env.board.Append(agent.MainChannel, msgs...)
		kept := message.CloneAll(msgs)
		env.rec.update(func(r *RunRecord) { r.Steered = append(r.Steered, kept...) })
		return nil
	}}
}

// AskUser asks the user prompt (one text part, source set to the engine's
// name) and writes the text of the reply to VarReply. The host's error
// ends the run with that error.
func AskUser(prompt string) Step {
	return Step{name: "ask_user", fn: func(ctx context.Context, env *Env) error {
		p := agent.UserPrompt{Parts: []message.Part{message.TextPart(prompt)}, Source: env.engine.name}
		env.rec.update(func(r *RunRecord) { r.Prompts = append(r.Prompts, p) })
		reply, err := env.host.AskUser(ctx, p)
		if err != nil {
			return err
		}
		env.rec.update(func(r *RunRecord) { r.Replies = append(r.Replies, reply) })
		env.board.Vars[VarReply] = message.Message{Parts: reply.Parts}.Text()
		return nil
	}}
}

// Checkpoint saves a checkpoint through the host from which a resumed run
// starts at the next step. A host error is recorded and the run goes on,
// as the graph engine does at wave boundaries.
func Checkpoint() Step {
	return Step{name: "checkpoint", fn: func(ctx context.Context, env *Env) error {
		_ = env.Checkpoint(ctx, env.step+1)
		return nil
	}}
}

// ReportUsage reports u to the host. A BudgetExceeded answer ends the run
// with that error; other errors are ignored, as the host contract says.
func ReportUsage(u agent.Usage) Step {
	return Step{name: "report_usage", fn: func(ctx context.Context, env *Env) error {
		if err := env.host.ReportUsage(ctx, u); errors.Is(err, fault.BudgetExceeded) {
			return err
		}
		return nil
	}}
}

// Fail ends the run with err (an Internal error when err is nil).
func Fail(err error) Step {
	if err == nil {
		err = fault.New(fault.Internal, "agenttest", "scripted failure")
	}
	return Step{name: "fail", fn: func(context.Context, *Env) error { return err }}
}

// Hang blocks until ctx ends and returns its error: an engine that ignores
// interrupts.
func Hang() Step {
	return Step{name: "hang", fn: func(ctx context.Context, _ *Env) error {
		<-ctx.Done()
		return ctx.Err()
	}}
}

// WaitGate marks g reached and blocks until the test opens it; it returns
// ctx's error when ctx ends first.
func WaitGate(g *Gate) Step {
	return Step{name: "gate", fn: func(ctx context.Context, _ *Env) error {
		if g == nil {
			return fault.New(fault.Internal, "agenttest", "gate step without a gate")
		}
		return g.wait(ctx)
	}}
}

func textDelta(text string) event.StreamDeltaPayload {
	p := message.TextPart(text)
	return event.StreamDeltaPayload{Type: event.DeltaPart, Part: &p}
}

// ReplyText returns the text of the assistant messages in msgs, joined by
// newlines: a short way to compare a result's output.
func ReplyText(msgs []message.Message) string {
	var parts []string
	for _, m := range msgs {
		if m.Role == message.RoleAssistant {
			parts = append(parts, m.Text())
		}
	}
	return strings.Join(parts, "\n")
}
