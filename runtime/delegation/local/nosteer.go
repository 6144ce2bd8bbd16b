package local

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// WithoutSteer returns h with its agent.SteerSource withheld: the result
// passes every Host method through to h but does not unwrap to it, so a
// capability search cannot reach h's steer queue (REF 2.3.12,
// 6.2.6). It re-offers the other capabilities a script's host functions
// use: the event bus (absent when h has none), the clock (the UTC wall
// clock when h has none), the random source and the log sink. h must not
// be nil.
func WithoutSteer(h agent.Host) agent.Host { return &noSteerHost{inner: h} }

// noSteerHost is WithoutSteer's host; a legacy sub-run's also withholds
// the caller's interrupt channel (noInterrupts).
type noSteerHost struct {
	inner        agent.Host
	noInterrupts bool
}

var (
	_ agent.Host             = (*noSteerHost)(nil)
	_ agent.HostUnwrapper    = (*noSteerHost)(nil)
	_ agent.EventBusProvider = (*noSteerHost)(nil)
	_ agent.Clock            = (*noSteerHost)(nil)
	_ agent.RandomSource     = (*noSteerHost)(nil)
	_ agent.LogSink          = (*noSteerHost)(nil)
)

// UnwrapHost returns nil: the capability search stops here.
func (h *noSteerHost) UnwrapHost() agent.Host { return nil }

func (h *noSteerHost) Publish(ctx context.Context, env event.Envelope) error {
	return h.inner.Publish(ctx, env)
}
func (h *noSteerHost) Interrupts() <-chan agent.Interrupt {
	if h.noInterrupts {
		return nil
	}
	return h.inner.Interrupts()
}
func (h *noSteerHost) AskUser(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error) {
	return h.inner.AskUser(ctx, p)
}
func (h *noSteerHost) Checkpoint(ctx context.Context, cp agent.Checkpoint) error {
	return h.inner.Checkpoint(ctx, cp)
}
func (h *noSteerHost) ReportUsage(ctx context.Context, u agent.Usage) error {
	return h.inner.ReportUsage(ctx, u)
}

// EventBus is the inner host's bus, or nil (which EventBusFromHost reports
// as absent).
func (h *noSteerHost) EventBus() event.Bus {
	bus, _ := agent.EventBusFromHost(h.inner)
	return bus
}

// Now is the inner host's clock, or the UTC wall clock.
func (h *noSteerHost) Now() time.Time {
	if c, ok := agent.CapabilityFromHost[agent.Clock](h.inner); ok {
		return c.Now()
	}
	return time.Now().UTC()
}

// Random is the inner host's random source, or the process's.
func (h *noSteerHost) Random() float64 {
	if r, ok := agent.CapabilityFromHost[agent.RandomSource](h.inner); ok {
		return r.Random()
	}
	return rand.Float64()
}

// Log writes to the inner host's log sink, or drops the line.
func (h *noSteerHost) Log(ctx context.Context, level, msg string, attrs map[string]any) {
	if l, ok := agent.CapabilityFromHost[agent.LogSink](h.inner); ok {
		l.Log(ctx, level, msg, attrs)
	}
}
