package session

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// Key identifies a session: an agent and a conversation context. Two agents
// with the same ContextID do not share state.
type Key struct {
	AgentID   string `json:"agent_id"`
	ContextID string `json:"context_id"`
}

// Validate checks that both fields are non-empty and carry no surrounding
// whitespace and no control character (NUL among them: stores join the
// two parts with one, so a part holding it could name another key).
func (k Key) Validate() error {
	for _, f := range []struct{ name, v string }{{"agent id", k.AgentID}, {"context id", k.ContextID}} {
		if f.v == "" || strings.TrimSpace(f.v) != f.v {
			return fault.New(fault.Validation, "session key", "%s %q must be non-empty with no surrounding whitespace", f.name, f.v)
		}
		if strings.ContainsFunc(f.v, unicode.IsControl) {
			return fault.New(fault.Validation, "session key", "%s %q must hold no control character", f.name, f.v)
		}
	}
	return nil
}

// String returns "agent/context".
func (k Key) String() string { return k.AgentID + "/" + k.ContextID }

// HostRequest is what a HostFactory gets to build one turn's host. Every
// field is required but Tenant, History and ResumeFrom.
type HostRequest struct {
	Key Key
	// Tenant is the tenant of the turn's agent ("" for an agent of no
	// tenant), for factories that account per tenant.
	Tenant     string
	RunID      string
	Interrupts <-chan agent.Interrupt
	// InterruptSent says when the interrupt on Interrupts was sent
	// (agent.InterruptClock); nil when nothing tells.
	InterruptSent func() (time.Time, bool)
	AskUser       func(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error)
	// History is the session history the turn starts from, and ResumeFrom
	// the checkpoint a resumed turn resumes; nil when there is none. A
	// factory must not change them (a recorder keeps copies).
	History    *agent.Board
	ResumeFrom *agent.Checkpoint
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

// buildHost asks the epoch's factory for the turn's host and wraps it:
// ephemeral wrapper (Checkpoint is a no-op) for ephemeral sessions, then the
// steer-source wrapper outermost (REF 1.12.5, 2.2.10, 2.2.11).
func (t *Turn) buildHost(ctx context.Context, ephemeral bool) (agent.Host, error) {
	product, err := t.ep.deps.HostFactory(ctx, HostRequest{
		Key: t.s.key, Tenant: t.tenant(), RunID: t.runID, Interrupts: t.intrCh, InterruptSent: t.interruptSent,
		AskUser: t.askUser,
		History: t.history, ResumeFrom: t.resumeFrom,
	})
	if err != nil {
		return nil, err
	}
	if product == nil || agent.IsNil(product) {
		return nil, fault.New(fault.Internal, "start turn", "host factory returned a nil host")
	}
	if _, ok := agent.CapabilityFromHost[agent.SteerSource](product); ok {
		return nil, fault.New(fault.Conflict, "start turn",
			"the host factory's host already implements agent.SteerSource; a turn has exactly one steer queue")
	}
	h := product
	if ephemeral {
		h = &ephemeralHost{Host: h}
	}
	if t.quota != nil && t.quota.q != (Quotas{}) { // the tenant's quotas, when it has any
		h = &quotaHost{Host: h, tq: t.quota}
	}
	return &steerHost{Host: h, turn: t}, nil
}

// ephemeralHost drops checkpoints: it shows each to the observer under it,
// if any (agent.CheckpointObserver), and stores none.
type ephemeralHost struct{ agent.Host }

func (h *ephemeralHost) Checkpoint(ctx context.Context, cp agent.Checkpoint) error {
	if o, ok := agent.CapabilityFromHost[agent.CheckpointObserver](h.Host); ok {
		o.ObserveCheckpoint(ctx, cp)
	}
	return nil
}
func (h *ephemeralHost) UnwrapHost() agent.Host { return h.Host }

// steerHost is the outermost wrapper: it makes the turn's queue the host's
// agent.SteerSource and exposes the session's tool catalog.
type steerHost struct {
	agent.Host
	turn *Turn
}

var (
	_ agent.SteerSource   = (*steerHost)(nil)
	_ agent.HostUnwrapper = (*steerHost)(nil)
	_ CatalogHost         = (*steerHost)(nil)
)

func (h *steerHost) DrainSteer() []message.Message { return h.turn.DrainSteer() }
func (h *steerHost) UnwrapHost() agent.Host        { return h.Host }
func (h *steerHost) SessionCatalog() any           { return h.turn.s.catalog(h.turn.ep) }
