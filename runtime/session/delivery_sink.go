package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// ErrSinkQueueFull: a sink's queue was full when the turn's stream had a
// new envelope for it, so the sink was detached. The producer never waits
// for a slow sink.
var ErrSinkQueueFull = fault.New(fault.BudgetExceeded, "session", "sink queue is full")

// Visibility says which stream a sink sees.
type Visibility string

// The visibilities.
const (
	// VisibilityRaw: every envelope of the run, in bus order, speculative
	// branch deltas as soon as they are published.
	VisibilityRaw Visibility = ""
	// VisibilityConfirmed: the confirmed stream, where speculative branch
	// deltas wait until their branch is accepted and each envelope carries
	// a delivery cursor.
	VisibilityConfirmed Visibility = "confirmed"
)

// Authority says whether a sink's deliveries decide what an interrupted
// turn commits.
type Authority string

// The authorities.
const (
	// AuthorityObserver: the sink only watches.
	AuthorityObserver Authority = ""
	// AuthorityAuthoritative: text delivered to (or acknowledged by) the
	// sink builds the acknowledged prefix that an interrupted turn commits.
	// It requires VisibilityConfirmed; a turn has at most one.
	AuthorityAuthoritative Authority = "authoritative"
)

// AckMode says when a delivery to the authoritative sink counts as
// acknowledged.
type AckMode string

// The acknowledgement modes.
const (
	// AckOnDelivery: a delivery is acknowledged when OnDelta returns nil. A
	// callback still running when the turn is interrupted is outside the
	// frozen prefix.
	AckOnDelivery AckMode = ""
	// AckExplicit: the sink acknowledges with Turn.Ack, cumulatively by
	// delivery cursor, possibly from inside OnDelta for the cursor being
	// offered. It requires a confirmed authoritative sink.
	AckExplicit AckMode = "explicit"
)

// SinkSpec attaches one stream sink to a turn.
type SinkSpec struct {
	// ID names the sink; required and unique within a turn.
	ID string
	// Sink receives the deltas; it must not be nil or a typed nil. A panic
	// in its OnDelta is recovered and detaches the sink with an Internal
	// error.
	Sink agent.StreamSink
	// QueueSize is the sink's own queue; 0 uses the manager's sink buffer
	// (sessions.sink_buffer). A full queue detaches the sink with
	// ErrSinkQueueFull.
	QueueSize int
	// DeliveryTimeout bounds each OnDelta call; 0 means 30 s. A call that
	// runs past it detaches the sink.
	DeliveryTimeout time.Duration
	// OnDetach, when set, is called once on its own goroutine when the sink
	// leaves the turn: with nil after it received the run-end, with the
	// cause otherwise. A panic in it is recovered.
	OnDetach func(error)
	// Visibility selects the raw or the confirmed stream.
	Visibility Visibility
	// Authority makes the sink authoritative (confirmed sinks only).
	Authority Authority
	// AckMode selects explicit acknowledgement (authoritative sinks only).
	AckMode AckMode
	// MaxUnacked bounds delivered-but-unacknowledged envelopes of an
	// explicit sink; 0 means the sink's queue size. Only explicit sinks may
	// set it.
	MaxUnacked int
}

// Validate checks one sink on its own; ValidateSinks also checks the set.
// Problems are Validation errors.
func (s SinkSpec) Validate() error {
	return s.validate("validate sink", sinkName(s.ID, -1))
}

// ValidateSinks checks every sink and the rules of a turn's set: ids are
// unique and at most one sink is authoritative. An empty set is valid.
func ValidateSinks(specs []SinkSpec) error {
	seen := make(map[string]int, len(specs))
	authoritative := -1
	for i, s := range specs {
		if err := s.validate("validate sinks", sinkName(s.ID, i)); err != nil {
			return err
		}
		if j, dup := seen[s.ID]; dup {
			return fault.New(fault.Validation, "validate sinks", "sinks[%d] and sinks[%d] share the id %q", j, i, s.ID)
		}
		seen[s.ID] = i
		if s.Authority == AuthorityAuthoritative {
			if authoritative >= 0 {
				return fault.New(fault.Validation, "validate sinks",
					"sinks[%d] and sinks[%d] are both authoritative; a turn has at most one", authoritative, i)
			}
			authoritative = i
		}
	}
	return nil
}

func sinkName(id string, i int) string {
	switch {
	case i < 0:
		return fmt.Sprintf("sink %q", id)
	case id == "":
		return fmt.Sprintf("sinks[%d]", i)
	}
	return fmt.Sprintf("sinks[%d] %q", i, id)
}

func (s SinkSpec) validate(op, name string) error {
	bad := func(format string, args ...any) error {
		return fault.New(fault.Validation, op, "%s: %s", name, fmt.Sprintf(format, args...))
	}
	switch {
	case s.ID == "":
		return bad("id is required")
	case s.Sink == nil || agent.IsNil(s.Sink):
		return bad("sink is required")
	case s.QueueSize < 0:
		return bad("queue size %d is negative", s.QueueSize)
	case s.DeliveryTimeout < 0:
		return bad("delivery timeout %s is negative", s.DeliveryTimeout)
	case s.Visibility != VisibilityRaw && s.Visibility != VisibilityConfirmed:
		return bad("visibility %q is neither \"\" nor %q", s.Visibility, VisibilityConfirmed)
	case s.Authority != AuthorityObserver && s.Authority != AuthorityAuthoritative:
		return bad("authority %q is neither \"\" nor %q", s.Authority, AuthorityAuthoritative)
	case s.AckMode != AckOnDelivery && s.AckMode != AckExplicit:
		return bad("ack mode %q is neither \"\" nor %q", s.AckMode, AckExplicit)
	case s.MaxUnacked < 0:
		return bad("max unacked %d is negative", s.MaxUnacked)
	case s.Authority == AuthorityAuthoritative && s.Visibility != VisibilityConfirmed:
		return bad("an authoritative sink must be confirmed")
	case s.AckMode == AckExplicit && (s.Visibility != VisibilityConfirmed || s.Authority != AuthorityAuthoritative):
		return bad("explicit ack requires a confirmed authoritative sink")
	case s.MaxUnacked > 0 && s.AckMode != AckExplicit:
		return bad("max unacked requires explicit ack")
	}
	return nil
}

// DeliveryCursorFromEnvelope returns the delivery cursor of an envelope of
// the confirmed stream (header event.HeaderDeliveryCursor). Cursors start
// at 1 and grow by 1 across the turn. A missing, malformed or zero cursor
// is a Validation error.
func DeliveryCursorFromEnvelope(env event.Envelope) (uint64, error) {
	raw, ok := env.Headers[event.HeaderDeliveryCursor]
	if !ok || raw == "" {
		return 0, fault.New(fault.Validation, "delivery cursor", "envelope %q has no %s header", env.Subject, event.HeaderDeliveryCursor)
	}
	n, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || n == 0 {
		return 0, fault.New(fault.Validation, "delivery cursor", "envelope %q: %s %q is not a positive integer",
			env.Subject, event.HeaderDeliveryCursor, raw)
	}
	return n, nil
}

// RunEndPayload is the payload of the one run-end every sink receives last
// (subject agent.run.<run>.end, header run_id, an empty delta): the turn's
// status and, when it failed, its error. The engine's own run-end events,
// one per attempt, are not forwarded to sinks.
type RunEndPayload struct {
	Status agent.Status `json:"status"`
	Error  string       `json:"error,omitempty"`
}

// runEndPublishError returns the RunEndPublishError in err's chain.
func runEndPublishError(err error) (*agent.RunEndPublishError, bool) {
	var rep *agent.RunEndPublishError
	ok := errors.As(err, &rep)
	return rep, ok
}

// StreamPolicy is the stream sinks of a turn as its context carries them,
// so that the runs it delegates to can stream to the same sinks. A turn
// stamps its sinks with Inheritable set; a boundary that must not leak the
// stream stamps a policy with Inheritable false.
type StreamPolicy struct {
	Sinks       []SinkSpec
	Inheritable bool
}

type streamPolicyKey struct{}

// ContextWithStreamPolicy returns a ctx carrying a copy of p.
func ContextWithStreamPolicy(ctx context.Context, p StreamPolicy) context.Context {
	p.Sinks = slices.Clone(p.Sinks)
	return context.WithValue(ctx, streamPolicyKey{}, p)
}

// StreamPolicyFromContext returns the policy ctx carries and whether it
// carries one. The Sinks slice is the caller's.
func StreamPolicyFromContext(ctx context.Context) (StreamPolicy, bool) {
	if ctx == nil {
		return StreamPolicy{}, false
	}
	p, ok := ctx.Value(streamPolicyKey{}).(StreamPolicy)
	if ok {
		p.Sinks = slices.Clone(p.Sinks)
	}
	return p, ok
}

// Inherited returns the sinks a delegated run attaches: nil unless the
// policy is inheritable, otherwise a copy of every sink downgraded to an
// observer (no authority, acknowledgement on delivery, no unacknowledged
// window). Visibility, queue size, delivery timeout and OnDetach are kept.
// The same sink may then be called from several runs at once, so it must
// be safe for concurrent OnDelta calls.
func (p StreamPolicy) Inherited() []SinkSpec {
	if !p.Inheritable || len(p.Sinks) == 0 {
		return nil
	}
	out := slices.Clone(p.Sinks)
	for i := range out {
		out[i].Authority = AuthorityObserver
		out[i].AckMode = AckOnDelivery
		out[i].MaxUnacked = 0
	}
	return out
}
