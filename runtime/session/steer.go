package session

import (
	"encoding/json"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// Steer queues msg for the running turn; a document node delivers it when
// it calls host.drainSteer() (REF 2.3). Non-delivery is always
// reported, checked in this order: an invalid message (Validation), a JSON
// encoding over 32 KiB (ErrSteerTooLarge), a settled turn (ErrSteerClosed),
// a requested interrupt (an *agent.InterruptedError), a full queue of 8
// (ErrSteerQueueFull). The message is deep-copied.
func (t *Turn) Steer(msg message.Message) error {
	if err := msg.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return fault.Wrap(fault.Validation, err, "steer", "encode")
	}
	if len(b) > MaxSteerMessageBytes {
		return ErrSteerTooLarge
	}
	msg = msg.Clone()
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.state.Terminal():
		return ErrSteerClosed
	case t.intr != nil:
		return agent.Interrupted(*t.intr)
	case len(t.steer) >= MaxSteerQueue:
		return ErrSteerQueueFull
	}
	t.steer = append(t.steer, msg)
	return nil
}

// PendingSteer returns how many steer messages are queued.
func (t *Turn) PendingSteer() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.steer)
}

// DrainSteer takes every queued message, in arrival order, as deep copies;
// nil when none is queued. It never blocks, never returns a message twice,
// and still works after the turn has settled, so the owner can recover
// undelivered messages.
func (t *Turn) DrainSteer() []message.Message {
	t.mu.Lock()
	q := t.steer
	t.steer = nil
	t.mu.Unlock()
	if len(q) == 0 {
		return nil
	}
	return message.CloneAll(q)
}
