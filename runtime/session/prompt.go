package session

import (
	"context"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// PromptStatus is how a prompt was resolved.
type PromptStatus string

// The prompt resolutions (REF 2.5.2).
const (
	PromptReplied     PromptStatus = "replied"
	PromptExpired     PromptStatus = "expired"
	PromptInterrupted PromptStatus = "interrupted"
	PromptClosed      PromptStatus = "closed"
)

// short internal names
const (
	promptReplied     = PromptReplied
	promptExpired     = PromptExpired
	promptInterrupted = PromptInterrupted
	promptClosed      = PromptClosed
)

// PromptRequested is the payload of agent.run.<run>.prompt.requested.
type PromptRequested struct {
	RunID    string           `json:"run_id"`
	TurnID   string           `json:"turn_id"`
	PromptID string           `json:"prompt_id"`
	Prompt   agent.UserPrompt `json:"prompt"`
}

// PromptResolved is the payload of agent.run.<run>.prompt.resolved.
type PromptResolved struct {
	RunID    string       `json:"run_id"`
	TurnID   string       `json:"turn_id"`
	PromptID string       `json:"prompt_id"`
	Status   PromptStatus `json:"status"`
}

// PatternPromptRequested matches every run's prompt requests.
func PatternPromptRequested() string { return "agent.run.*.prompt.requested" }

// PatternPromptResolved matches every run's prompt resolutions.
func PatternPromptResolved() string { return "agent.run.*.prompt.resolved" }

const promptPublishTimeout = 2 * time.Second

type prompt struct {
	id     string
	done   chan struct{} // closed when resolved
	status PromptStatus  // set before done is closed
	reply  agent.UserReply
}

// askUser is the AskUser of the base host (REF 2.5).
func (t *Turn) askUser(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error) {
	if t.cfg.AskUser != nil {
		return t.cfg.AskUser(ctx, p)
	}
	t.mu.Lock()
	switch {
	case t.state.Terminal():
		t.mu.Unlock()
		return agent.UserReply{}, ErrPromptClosed
	case t.intr != nil:
		intr := *t.intr
		t.mu.Unlock()
		return agent.UserReply{}, agent.Interrupted(intr)
	}
	pr := &prompt{id: randomHex(16), done: make(chan struct{})}
	t.prompts[pr.id] = pr
	t.mu.Unlock()

	if err := t.publishPrompt(ctx, pr, p); err != nil {
		t.resolveOne(pr, promptClosed)
		return agent.UserReply{}, err
	}
	select {
	case <-pr.done:
	case <-ctx.Done():
		t.resolveOne(pr, promptExpired)
		<-pr.done
	}
	switch pr.status {
	case promptReplied:
		return pr.reply, nil
	case promptExpired:
		return agent.UserReply{}, ctx.Err()
	case promptInterrupted:
		t.mu.Lock()
		intr := *t.intr
		t.mu.Unlock()
		return agent.UserReply{}, agent.Interrupted(intr)
	}
	return agent.UserReply{}, ErrPromptClosed
}

func (t *Turn) publishPrompt(ctx context.Context, pr *prompt, p agent.UserPrompt) error {
	env, err := event.NewEnvelope(ctx, event.SubjectPromptRequested(t.runID), PromptRequested{
		RunID: t.runID, TurnID: t.runID, PromptID: pr.id, Prompt: p,
	})
	if err != nil {
		return err
	}
	env.Headers = map[string]string{event.HeaderRunID: t.runID, event.HeaderAgentID: t.s.key.AgentID}
	return t.ep.deps.Bus.Publish(ctx, env)
}

// Reply answers a pending prompt (REF 2.5.2, 2.5.4).
func (t *Turn) Reply(ctx context.Context, promptID string, reply agent.UserReply) error {
	if ctx == nil {
		return fault.New(fault.Validation, "reply", "ctx must not be nil")
	}
	t.mu.Lock()
	pr, ok := t.prompts[promptID]
	if !ok {
		t.mu.Unlock()
		return ErrPromptUnknown
	}
	select {
	case <-pr.done:
		t.mu.Unlock()
		if pr.status == promptReplied {
			return ErrPromptDuplicate
		}
		return ErrPromptClosed
	default:
	}
	pr.reply = reply
	t.resolveLocked(pr, promptReplied)
	t.mu.Unlock()
	t.publishResolved(pr.id, promptReplied)
	return nil
}

// resolveOne resolves pr once with status and publishes the resolution; it
// reports whether this call resolved it.
func (t *Turn) resolveOne(pr *prompt, status PromptStatus) bool {
	t.mu.Lock()
	ok := t.resolveLocked(pr, status)
	t.mu.Unlock()
	if ok {
		t.publishResolved(pr.id, status)
	}
	return ok
}

// resolveLocked marks pr resolved unless it already is.
func (t *Turn) resolveLocked(pr *prompt, status PromptStatus) bool {
	select {
	case <-pr.done:
		return false
	default:
	}
	pr.status = status
	close(pr.done)
	return true
}

// takePromptsLocked returns the unresolved prompts.
func (t *Turn) takePromptsLocked() []*prompt {
	var out []*prompt
	for _, pr := range t.prompts {
		select {
		case <-pr.done:
		default:
			out = append(out, pr)
		}
	}
	return out
}

func (t *Turn) resolvePrompts(prs []*prompt, status PromptStatus) {
	for _, pr := range prs {
		t.resolveOne(pr, status)
	}
}

// publishResolved publishes best-effort with a 2 s timeout.
func (t *Turn) publishResolved(id string, status PromptStatus) {
	ctx, cancel := context.WithTimeout(context.Background(), promptPublishTimeout)
	defer cancel()
	env, err := event.NewEnvelope(ctx, event.SubjectPromptResolved(t.runID), PromptResolved{
		RunID: t.runID, TurnID: t.runID, PromptID: id, Status: status,
	})
	if err != nil {
		return
	}
	env.Headers = map[string]string{event.HeaderRunID: t.runID, event.HeaderAgentID: t.s.key.AgentID}
	if err := t.ep.deps.Bus.Publish(ctx, env); err != nil {
		t.s.m.logger.Warn("publish prompt resolution", "run", t.runID, "prompt", id, "error", err)
	}
}
