package sandbox

import (
	"context"
	"slices"
	"sync"

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
	closing <-chan struct{}

	mu   sync.Mutex
	size int
	used int
	// waiting are the Takes waiting for a slot, first come first: Leave
	// hands its slot to the first by closing its channel.
	waiting []chan struct{}
}

// NewSlots returns n slots; a Take waiting for one ends with
// ErrSlotsClosed when closing is closed.
func NewSlots(n int, closing <-chan struct{}) *Slots {
	return &Slots{size: n, closing: closing}
}

// Size is the number of slots.
func (s *Slots) Size() int { return s.size }

// Take waits for a free slot: ctx's error when ctx ends first,
// ErrSlotsClosed when the runtime closes. A free slot is taken under a
// mutex, without a channel operation; waiters are served in order.
func (s *Slots) Take(ctx context.Context) error {
	s.mu.Lock()
	if s.used < s.size && len(s.waiting) == 0 {
		s.used++
		s.mu.Unlock()
		return nil
	}
	granted := make(chan struct{})
	s.waiting = append(s.waiting, granted)
	s.mu.Unlock()
	var err error
	select {
	case <-granted:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-s.closing:
		err = ErrSlotsClosed
	}
	s.mu.Lock()
	if i := slices.Index(s.waiting, granted); i >= 0 {
		s.waiting = slices.Delete(s.waiting, i, i+1)
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	// The slot was handed over as the wait ended: give it on.
	s.Leave()
	return err
}

// TryTake takes a free slot if there is one at once (and no Take waits
// for one); it reports whether it took one.
func (s *Slots) TryTake() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used < s.size && len(s.waiting) == 0 {
		s.used++
		return true
	}
	return false
}

// Leave frees a slot Take or TryTake took, handing it to the first waiting
// Take.
func (s *Slots) Leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiting) > 0 {
		close(s.waiting[0])
		s.waiting[0] = nil
		s.waiting = s.waiting[1:]
		return
	}
	s.used--
}
