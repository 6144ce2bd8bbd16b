package agenttest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// Host is an agent.Host for engine tests that records what it is asked to
// do. It also offers agent.SteerSource and, until SetEventBus(false), an
// event bus (agent.EventBusProvider), as a session's host does. Make one
// with NewHost; it is safe for concurrent use.
type Host struct {
	EventBusSwitch

	mu          sync.Mutex
	interrupts  chan agent.Interrupt
	intrSent    time.Time // when the last interrupt was delivered
	envs        []event.Envelope
	checkpoints []agent.Checkpoint
	usage       []agent.Usage
	steer       []message.Message
	publishErr  func(ctx context.Context, env event.Envelope) error
	askUser     func(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error)
	cpErr       error
	usageErr    error
}

var (
	_ agent.Host             = (*Host)(nil)
	_ agent.SteerSource      = (*Host)(nil)
	_ agent.EventBusProvider = (*Host)(nil)
	_ agent.InterruptClock   = (*Host)(nil)
)

// NewHost returns a host that accepts everything. Its interrupt channel
// holds one interrupt; AskUser is NotAvailable until SetAskUser.
func NewHost() *Host { return &Host{interrupts: make(chan agent.Interrupt, 1)} }

// EventBusSwitch is the event-bus capability of a test host
// (agent.EventBusProvider): an in-memory bus of its own, made at the first
// EventBus call, until SetEventBus(false) withholds it, as a host of a
// runtime without an event bus does (scripts then cannot host.publish).
// The zero value yields a bus. Embed it in a host; it is safe for
// concurrent use. What the host publishes does not go through the bus:
// tests read the host's own record.
type EventBusSwitch struct {
	mu  sync.Mutex
	bus *event.MemoryBus
	off bool
}

var _ agent.EventBusProvider = (*EventBusSwitch)(nil)

// SetEventBus yields the bus (on) or withholds it.
func (s *EventBusSwitch) SetEventBus(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.off = !on
}

// EventBus returns the bus, or nil after SetEventBus(false).
func (s *EventBusSwitch) EventBus() event.Bus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off {
		return nil
	}
	if s.bus == nil {
		s.bus = event.NewMemoryBus()
	}
	return s.bus
}

// SetPublishError makes Publish call fn first; a non-nil result is
// returned and the envelope is not recorded.
func (h *Host) SetPublishError(fn func(ctx context.Context, env event.Envelope) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.publishErr = fn
}

// SetAskUser makes AskUser call fn.
func (h *Host) SetAskUser(fn func(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.askUser = fn
}

// SetCheckpointError makes Checkpoint fail with err (nil accepts again).
func (h *Host) SetCheckpointError(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cpErr = err
}

// SetUsageError makes ReportUsage return err after recording the usage.
func (h *Host) SetUsageError(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usageErr = err
}

// Interrupt delivers intr on the interrupt channel. It reports false when
// an earlier interrupt is still waiting there (the first one wins).
func (h *Host) Interrupt(intr agent.Interrupt) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case h.interrupts <- intr:
		h.intrSent = time.Now()
		return true
	default:
		return false
	}
}

// InterruptSent returns when the last interrupt Interrupt delivered was
// sent (agent.InterruptClock).
func (h *Host) InterruptSent() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.intrSent, !h.intrSent.IsZero()
}

// Steer queues messages for DrainSteer.
func (h *Host) Steer(msgs ...message.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steer = append(h.steer, message.CloneAll(msgs)...)
}

// Envelopes returns copies of the envelopes published so far, in order.
func (h *Host) Envelopes() []event.Envelope {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]event.Envelope, len(h.envs))
	for i, env := range h.envs {
		out[i] = env.Clone()
	}
	return out
}

// Subjects returns the subjects of the envelopes published so far.
func (h *Host) Subjects() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.envs))
	for i, env := range h.envs {
		out[i] = env.Subject
	}
	return out
}

// Checkpoints returns copies of the checkpoints saved so far.
func (h *Host) Checkpoints() []agent.Checkpoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]agent.Checkpoint, len(h.checkpoints))
	for i, cp := range h.checkpoints {
		out[i] = cp.Clone()
	}
	return out
}

// Usage returns the usage reported so far.
func (h *Host) Usage() []agent.Usage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.usage)
}

// Publish records env.
func (h *Host) Publish(ctx context.Context, env event.Envelope) error {
	h.mu.Lock()
	fn := h.publishErr
	h.mu.Unlock()
	if fn != nil {
		if err := fn(ctx, env); err != nil {
			return err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.envs = append(h.envs, env.Clone())
	return nil
}

// Interrupts returns the interrupt channel.
func (h *Host) Interrupts() <-chan agent.Interrupt { return h.interrupts }

// AskUser calls the SetAskUser function, or returns NotAvailable.
func (h *Host) AskUser(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error) {
	h.mu.Lock()
	fn := h.askUser
	h.mu.Unlock()
	if fn == nil {
		return agent.UserReply{}, fault.New(fault.NotAvailable, "ask user", "this host cannot ask the user")
	}
	return fn(ctx, p)
}

// Checkpoint records cp, or fails with the SetCheckpointError error.
func (h *Host) Checkpoint(_ context.Context, cp agent.Checkpoint) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cpErr != nil {
		return h.cpErr
	}
	h.checkpoints = append(h.checkpoints, cp.Clone())
	return nil
}

// ReportUsage records u and returns the SetUsageError error.
func (h *Host) ReportUsage(_ context.Context, u agent.Usage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage = append(h.usage, u)
	return h.usageErr
}

// DrainSteer returns and forgets the queued messages (nil when none).
func (h *Host) DrainSteer() []message.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.steer
	h.steer = nil
	return out
}
