package sandboxtest

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// Host is a deterministic agent.Host for the suite: it records what a
// script publishes and logs, and provides every optional capability the
// host ABI uses (Clock, RandomSource, LogSink, SteerSource and, until
// SetEventBus(false), an event bus for host.publish). Its clock
// starts at a fixed instant and moves one second per reading; its random
// numbers come from a generator seeded with the seed. It is safe for
// concurrent use.
type Host struct {
	// EventBusSwitch yields the bus host.publish needs;
	// SetEventBus(false) withholds it.
	agenttest.EventBusSwitch

	mu         sync.Mutex
	now        time.Time
	rng        *rand.Rand
	events     []event.Envelope
	logs       []LogLine
	usage      []agent.Usage
	steer      []message.Message
	interrupts chan agent.Interrupt
	reply      agent.UserReply
}

// LogLine is one host.log call the Host received.
type LogLine struct {
	Level, Message string
	Attrs          map[string]any
}

// Epoch returns the first reading of a Host's clock.
func Epoch() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) }

var (
	_ agent.Host             = (*Host)(nil)
	_ agent.Clock            = (*Host)(nil)
	_ agent.RandomSource     = (*Host)(nil)
	_ agent.LogSink          = (*Host)(nil)
	_ agent.SteerSource      = (*Host)(nil)
	_ agent.EventBusProvider = (*Host)(nil)
)

// NewHost returns a Host whose random numbers follow seed.
func NewHost(seed uint64) *Host {
	return &Host{
		now:        Epoch(),
		rng:        rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		interrupts: make(chan agent.Interrupt, 1),
		reply:      agent.UserReply{Parts: []message.Part{message.TextPart("yes")}},
	}
}

// Publish records env.
func (h *Host) Publish(_ context.Context, env event.Envelope) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, env)
	return nil
}

// Interrupts returns the channel Interrupt sends on.
func (h *Host) Interrupts() <-chan agent.Interrupt { return h.interrupts }

// Interrupt queues an interrupt for checkInterrupt to see.
func (h *Host) Interrupt(i agent.Interrupt) {
	select {
	case h.interrupts <- i:
	default:
	}
}

// AskUser answers every prompt with "yes".
func (h *Host) AskUser(context.Context, agent.UserPrompt) (agent.UserReply, error) {
	return h.reply, nil
}

// Checkpoint accepts and drops cp.
func (h *Host) Checkpoint(context.Context, agent.Checkpoint) error { return nil }

// ReportUsage records u.
func (h *Host) ReportUsage(_ context.Context, u agent.Usage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage = append(h.usage, u)
	return nil
}

// Now returns the clock's reading and moves it one second on.
func (h *Host) Now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.now
	h.now = h.now.Add(time.Second)
	return t
}

// Random returns the generator's next number in [0, 1).
func (h *Host) Random() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rng.Float64()
}

// Log records one log line.
func (h *Host) Log(_ context.Context, level, msg string, attrs map[string]any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, LogLine{Level: level, Message: msg, Attrs: attrs})
}

// Steer queues messages for host.drainSteer.
func (h *Host) Steer(msgs ...message.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steer = append(h.steer, msgs...)
}

// DrainSteer returns and forgets the queued steer messages.
func (h *Host) DrainSteer() []message.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.steer
	h.steer = nil
	return out
}

// Events returns the envelopes published so far.
func (h *Host) Events() []event.Envelope {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]event.Envelope(nil), h.events...)
}

// Logs returns the log lines received so far.
func (h *Host) Logs() []LogLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]LogLine(nil), h.logs...)
}
