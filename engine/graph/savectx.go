package graph

import (
	"context"
	"sync"
	"time"
)

// saveCtx is the context of a run's checkpoint saves: the run's values
// without its cancellation, each save bounded by the checkpoint timeout.
// One saveCtx serves every wave of a run, re-armed per save, rather than a
// timer-backed context per wave; its timer starts only when a save asks
// for Done, so a save that only checks Err (an in-memory store) costs no
// timer at all. Its error, once a save ran out of time, is
// context.DeadlineExceeded.
type saveCtx struct {
	values context.Context // the run's ctx without its cancellation

	mu       sync.Mutex
	armed    bool // a save is running
	deadline time.Time
	done     chan struct{} // made by Done; closed when the armed save runs out of time
	err      error
	timer    *time.Timer // started by Done
	ticking  bool        // the timer runs for the armed save
}

var _ context.Context = (*saveCtx)(nil)

// saveContext returns the run's saveCtx, with the values of ctx.
func (r *runState) saveContext(ctx context.Context) *saveCtx {
	r.own.save.values = context.WithoutCancel(ctx)
	return &r.own.save
}

// arm readies the context for one save of at most d. A context that ran
// out of time in an earlier save is made live again.
func (s *saveCtx) arm(d time.Duration) context.Context { return s.armAt(time.Now(), d) }

// armAt is arm for a save that starts at now.
func (s *saveCtx) armAt(now time.Time, d time.Duration) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		s.done, s.err = nil, nil
	}
	s.armed, s.deadline = true, now.Add(d)
	return s
}

// disarm ends a save: its time no longer runs.
func (s *saveCtx) disarm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	if s.ticking {
		s.timer.Stop()
		s.ticking = false
	}
}

// stop releases the timer; the run is over.
func (s *saveCtx) stop() { s.disarm() }

// expire ends the armed save when its deadline has passed; a firing of a
// timer armed for an earlier save, late, finds a later deadline (or no
// save) and does nothing.
func (s *saveCtx) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
}

// expireLocked sets the error and closes done when the armed save's
// deadline has passed; s.mu is held. The deadline carries the monotonic
// reading of the save's start, so only the monotonic clock is read.
func (s *saveCtx) expireLocked() {
	if !s.armed || s.err != nil || time.Until(s.deadline) > 0 {
		return
	}
	s.err = context.DeadlineExceeded
	if s.done != nil {
		close(s.done)
	}
}

func (s *saveCtx) Deadline() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline, true
}

// Done returns the channel that closes when the armed save runs out of
// time, starting the timer that closes it.
func (s *saveCtx) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
		if s.err != nil {
			close(s.done)
			return s.done
		}
	}
	if s.armed && s.err == nil && !s.ticking {
		d := time.Until(s.deadline)
		if s.timer == nil {
			s.timer = time.AfterFunc(d, s.expire)
		} else {
			s.timer.Reset(d)
		}
		s.ticking = true
	}
	return s.done
}

func (s *saveCtx) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	return s.err
}

func (s *saveCtx) Value(key any) any { return s.values.Value(key) }
