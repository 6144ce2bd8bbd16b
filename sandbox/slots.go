package sandbox

import (
	"context"

	"github.com/corral-rt/corral/fault"
)

// ErrSlotsClosed is what Slots.Take returns when the runtime that owns the
// slots closes while the caller waits.
var ErrSlotsClosed = fault.New(fault.NotAvailable, "take slot", "runtime closed")

// Slots bound how many calls of a runtime run at once (its pool_size).
// A call takes a slot before it runs and leaves it when it ends; a call
// blocked in a host call that may wait for long (hostabi.Func.Blocking)
// leaves its slot meanwhile and takes one again before it goes on.
type Slots struct {
	ch      chan struct{}
	closing <-chan struct{}
}

// NewSlots returns n slots; a Take waiting for one ends with
// ErrSlotsClosed when closing is closed.
func NewSlots(n int, closing <-chan struct{}) *Slots {
	return &Slots{ch: make(chan struct{}, n), closing: closing}
}

// Size is the number of slots.
func (s *Slots) Size() int { return cap(s.ch) }

// Take waits for a free slot: ctx's error when ctx ends first,
// ErrSlotsClosed when the runtime closes.
func (s *Slots) Take(ctx context.Context) error {
	select {
	case s.ch <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing:
		return ErrSlotsClosed
	}
}

// Leave frees a slot Take took.
func (s *Slots) Leave() { <-s.ch }
