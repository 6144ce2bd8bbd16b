package session

import (
	"context"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
)

// Key identifies a session: an agent and a conversation context. Two agents
// with the same ContextID do not share state.
type Key struct {
	AgentID   string `json:"agent_id"`
	ContextID string `json:"context_id"`
}

// Validate checks that both fields are non-empty and carry no surrounding
// whitespace.
func (k Key) Validate() error {
	for _, f := range []struct{ name, v string }{{"agent id", k.AgentID}, {"context id", k.ContextID}} {
		if f.v == "" || strings.TrimSpace(f.v) != f.v {
			return fault.New(fault.Validation, "session key", "%s %q must be non-empty with no surrounding whitespace", f.name, f.v)
		}
	}
	return nil
}

// String returns "agent/context".
func (k Key) String() string { return k.AgentID + "/" + k.ContextID }

// HostRequest is what a HostFactory gets to build one turn's host. Every
// field is required.
type HostRequest struct {
	Key        Key
	RunID      string
	Interrupts <-chan agent.Interrupt
	AskUser    func(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error)
}

// Validate checks that every field is set.
func (r HostRequest) Validate() error {
	switch {
	case r.Key.Validate() != nil:
		return r.Key.Validate()
	case r.RunID == "":
		return fault.New(fault.Validation, "host request", "run id is required")
	case r.Interrupts == nil:
		return fault.New(fault.Validation, "host request", "interrupts channel is required")
	case r.AskUser == nil:
		return fault.New(fault.Validation, "host request", "ask-user function is required")
	}
	return nil
}

// HostFactory builds the host of one turn.
type HostFactory func(ctx context.Context, req HostRequest) (agent.Host, error)
