package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// Host is what an engine receives to reach the world during one run. Hosts
// must be safe for concurrent use.
type Host interface {
	Publisher
	Interrupter
	UserPrompter
	Checkpointer
	UsageReporter
}

// Publisher publishes events.
type Publisher interface {
	Publish(ctx context.Context, env event.Envelope) error
}

// Interrupter exposes the run's interrupts. A nil channel never fires.
type Interrupter interface {
	Interrupts() <-chan Interrupt
}

// UserPrompter asks the user a question and waits for the reply.
type UserPrompter interface {
	AskUser(ctx context.Context, p UserPrompt) (UserReply, error)
}

// Checkpointer saves a run checkpoint. cp and everything it references
// (the board, the steps, the attributes) stay the caller's: an
// implementation reads them during the call and never changes them (the
// graph engine hands its live board, and steps and attributes it shares
// between runs), and copies what it keeps, as a CheckpointStore's Save
// does.
type Checkpointer interface {
	Checkpoint(ctx context.Context, cp Checkpoint) error
}

// UsageReporter receives usage. A BudgetExceeded error means the run must
// stop spending; other errors are only for observability.
type UsageReporter interface {
	ReportUsage(ctx context.Context, u Usage) error
}

// InterruptClock is a host capability (CapabilityFromHost) that says when
// the interrupt a run took from Interrupts was sent: InterruptSent returns
// the time of the last interrupt delivered to the channel, and false
// before one. An engine that gives a running node a grace after an
// interrupt measures it from then, not from when its watcher of the
// channel was scheduled, which on a busy machine can be milliseconds
// later.
type InterruptClock interface {
	InterruptSent() (time.Time, bool)
}

// Meter is a host capability (CapabilityFromHost) through which an engine
// charges the work of a turn to its tenant's quotas: ChargeCPU after each
// script call with the CPU time the call took (or its duration when the
// runner cannot tell CPU time). An error is a quota the charge passed —
// BudgetExceeded for the turn's own amount, RateLimit for the tenant's
// rate — and the work must stop; it names the quota and the tenant.
type Meter interface {
	ChargeCPU(d time.Duration) error
}

// Interrupt asks a run to stop at its next safe point.
type Interrupt struct {
	Cause  InterruptCause `json:"cause"`
	Detail string         `json:"detail,omitempty"`
}

// InterruptCause says why a run is interrupted.
type InterruptCause string

// The interrupt causes.
const (
	CauseUserCancel   InterruptCause = "user_cancel"
	CauseUserInput    InterruptCause = "user_input"
	CauseHostShutdown InterruptCause = "host_shutdown"
	CauseCustom       InterruptCause = "custom"
)

// InterruptedError reports that a run stopped at an interrupt. It is of
// kind fault.Interrupted.
type InterruptedError struct {
	Interrupt Interrupt
}

func (e *InterruptedError) Error() string {
	if e.Interrupt.Detail != "" {
		return fmt.Sprintf("interrupted: %s: %s", e.Interrupt.Cause, e.Interrupt.Detail)
	}
	return fmt.Sprintf("interrupted: %s", e.Interrupt.Cause)
}

// Unwrap makes errors.Is(err, fault.Interrupted) hold.
func (e *InterruptedError) Unwrap() error { return fault.Interrupted }

// Interrupted returns an *InterruptedError for intr.
func Interrupted(intr Interrupt) error { return &InterruptedError{Interrupt: intr} }

// UserPrompt is a question for the user.
type UserPrompt struct {
	Parts    []message.Part    `json:"parts"`
	Schema   json.RawMessage   `json:"schema,omitempty"`
	Source   string            `json:"source,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// UserReply is the user's answer.
type UserReply struct {
	Parts    []message.Part    `json:"parts"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Usage is what a run spent.
type Usage struct {
	InputTokens  int64 `json:"input"`
	OutputTokens int64 `json:"output"`
	TotalTokens  int64 `json:"total"`
}

// HostUnwrapper is implemented by host decorators. UnwrapHost returns the
// decorated host, or nil to stop a capability search at this decorator.
type HostUnwrapper interface {
	UnwrapHost() Host
}

// MaxUnwrapDepth is how many times CapabilityFromHost follows UnwrapHost.
// The host passed in is at depth 0 and the host reached after n unwraps is
// at depth n: a capability at depth MaxUnwrapDepth is found, one at depth
// MaxUnwrapDepth+1 is not.
const MaxUnwrapDepth = 64

// CapabilityFromHost finds the optional capability T on h: h itself, then
// each host reached through HostUnwrapper.UnwrapHost, down to depth
// MaxUnwrapDepth. The search stops, finding nothing, at a host that is not a
// HostUnwrapper, at a decorator whose UnwrapHost returns nil, and past the
// depth limit, so a cyclic chain terminates. Typed nils (a nil pointer in a
// Host interface) count as absent, both as hosts and as capabilities.
func CapabilityFromHost[T any](h Host) (T, bool) {
	var zero T
	for depth := 0; !isNil(h); depth++ {
		if c, ok := any(h).(T); ok && !isNil(c) {
			return c, true
		}
		u, ok := h.(HostUnwrapper)
		if !ok || depth == MaxUnwrapDepth {
			break
		}
		h = u.UnwrapHost()
	}
	return zero, false
}

// CheckpointObserver is a host layer that watches a run's checkpoints
// without storing them (a recorder, for one). A session that stores no
// checkpoints, an ephemeral one, still shows each checkpoint to the first
// observer under its host, so what an observer sees does not depend on
// whether the session keeps them.
type CheckpointObserver interface {
	ObserveCheckpoint(ctx context.Context, cp Checkpoint)
}

// SteerSource is the capability that hands a running turn the messages
// steered to it. DrainSteer is destructive and never blocks.
type SteerSource interface {
	DrainSteer() []message.Message
}

// EventBusProvider is the capability that exposes the run's event bus.
type EventBusProvider interface {
	EventBus() event.Bus
}

// SteerFromHost returns the turn's steer source, if the host carries one.
func SteerFromHost(h Host) (SteerSource, bool) { return CapabilityFromHost[SteerSource](h) }

// EventBusFromHost returns the run's event bus, if the host carries an
// EventBusProvider whose bus is not nil. The first provider that
// CapabilityFromHost finds decides: when its bus is nil (or a typed nil) the
// result is (nil, false), even if a deeper host has a bus.
func EventBusFromHost(h Host) (event.Bus, bool) {
	p, ok := CapabilityFromHost[EventBusProvider](h)
	if !ok {
		return nil, false
	}
	b := p.EventBus()
	if isNil(b) {
		return nil, false
	}
	return b, true
}

// NoopHost drops publishes and checkpoints, never interrupts, refuses
// AskUser with NotAvailable and accepts usage. It deliberately offers no
// capability: no EventBus, no SteerSource, and it unwraps to nothing.
type NoopHost struct{}

var _ Host = NoopHost{}

// Publish drops env.
func (NoopHost) Publish(context.Context, event.Envelope) error { return nil }

// Interrupts returns nil: no interrupt ever fires.
func (NoopHost) Interrupts() <-chan Interrupt { return nil }

// AskUser is not available.
func (NoopHost) AskUser(context.Context, UserPrompt) (UserReply, error) {
	return UserReply{}, fault.New(fault.NotAvailable, "ask user", "this host cannot ask the user")
}

// Checkpoint drops cp.
func (NoopHost) Checkpoint(context.Context, Checkpoint) error { return nil }

// ReportUsage accepts u.
func (NoopHost) ReportUsage(context.Context, Usage) error { return nil }

// HostFuncs decorates Inner, replacing the methods whose function is set
// and passing every other call through to Inner unchanged. It unwraps to
// Inner, so capabilities of Inner stay reachable through CapabilityFromHost.
// Use it as a pointer (*HostFuncs is the Host).
//
// Inner must not be nil; if it is, the methods that are not replaced return
// an Internal error (Interrupts returns nil) instead of panicking.
type HostFuncs struct {
	Inner         Host // must not be nil
	PublishFn     func(ctx context.Context, env event.Envelope) error
	InterruptsFn  func() <-chan Interrupt
	AskUserFn     func(ctx context.Context, p UserPrompt) (UserReply, error)
	CheckpointFn  func(ctx context.Context, cp Checkpoint) error
	ReportUsageFn func(ctx context.Context, u Usage) error
}

var (
	_ Host          = (*HostFuncs)(nil)
	_ HostUnwrapper = (*HostFuncs)(nil)
)

// errNoInner is returned by a HostFuncs method that has neither a function
// nor an inner host to call.
func errNoInner(method string) error {
	return fault.New(fault.Internal, "host funcs", "%s: no function and no inner host", method)
}

// Publish calls PublishFn or Inner.
func (h *HostFuncs) Publish(ctx context.Context, env event.Envelope) error {
	switch {
	case h.PublishFn != nil:
		return h.PublishFn(ctx, env)
	case h.Inner == nil:
		return errNoInner("publish")
	}
	return h.Inner.Publish(ctx, env)
}

// Interrupts calls InterruptsFn or Inner.
func (h *HostFuncs) Interrupts() <-chan Interrupt {
	switch {
	case h.InterruptsFn != nil:
		return h.InterruptsFn()
	case h.Inner == nil:
		return nil
	}
	return h.Inner.Interrupts()
}

// AskUser calls AskUserFn or Inner.
func (h *HostFuncs) AskUser(ctx context.Context, p UserPrompt) (UserReply, error) {
	switch {
	case h.AskUserFn != nil:
		return h.AskUserFn(ctx, p)
	case h.Inner == nil:
		return UserReply{}, errNoInner("ask user")
	}
	return h.Inner.AskUser(ctx, p)
}

// Checkpoint calls CheckpointFn or Inner.
func (h *HostFuncs) Checkpoint(ctx context.Context, cp Checkpoint) error {
	switch {
	case h.CheckpointFn != nil:
		return h.CheckpointFn(ctx, cp)
	case h.Inner == nil:
		return errNoInner("checkpoint")
	}
	return h.Inner.Checkpoint(ctx, cp)
}

// ReportUsage calls ReportUsageFn or Inner.
func (h *HostFuncs) ReportUsage(ctx context.Context, u Usage) error {
	switch {
	case h.ReportUsageFn != nil:
		return h.ReportUsageFn(ctx, u)
	case h.Inner == nil:
		return errNoInner("report usage")
	}
	return h.Inner.ReportUsage(ctx, u)
}

// UnwrapHost returns Inner.
func (h *HostFuncs) UnwrapHost() Host { return h.Inner }

type hostKey struct{}

// ContextWithHost returns ctx carrying h, for tools that run inside a
// node. It is not a substitute for the host an engine is given: engines use
// the host passed to Execute.
func ContextWithHost(ctx context.Context, h Host) context.Context {
	return context.WithValue(ctx, hostKey{}, h)
}

// HostFromContext returns the host carried by ctx. A context without a
// host, or one carrying a nil or typed-nil host, yields (nil, false).
func HostFromContext(ctx context.Context) (Host, bool) {
	h, ok := ctx.Value(hostKey{}).(Host)
	if !ok || isNil(h) {
		return nil, false
	}
	return h, true
}

// isNil reports whether v is nil or an interface holding a typed nil
// pointer, map, slice, channel or function. The spec counts typed nils as
// absent capabilities, which needs reflect.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// IsNil reports whether v is nil or a typed nil. The runtime uses it where
// the seed says a typed-nil value counts as absent.
func IsNil(v any) bool { return isNil(v) }
