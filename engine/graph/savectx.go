package graph

import (
	"context"
	"sync"
	"time"
)

// saveCtx is the context of a run's checkpoint saves: the run's values
// without its cancellation, each save bounded by the checkpoint timeout.
// One saveCtx and one timer serve every wave of a run, re-armed per save,
// rather than a timer-backed context per wave. Its error, once a save
// ran out of time, is context.DeadlineExceeded.
type saveCtx struct {
	values context.Context // the run's ctx without its cancellation

	mu       sync.Mutex
	deadline time.Time
	done     chan struct{} // closed when the armed save runs out of time
	err      error
	timer    *time.Timer
}

var _ context.Context = (*saveCtx)(nil)

func newSaveCtx(values context.Context) *saveCtx {
	return &saveCtx{values: values}
}

// arm readies the context for one save of at most d. A context that ran
// out of time in an earlier save is made live again.
func (s *saveCtx) arm(d time.Duration) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil || s.err != nil {
		s.done, s.err = make(chan struct{}), nil
	}
	s.deadline = time.Now().Add(d)
	if s.timer == nil {
		s.timer = time.AfterFunc(d, s.expire)
	} else {
		s.timer.Reset(d)
	}
	return s
}

// disarm ends a save: its time no longer runs.
func (s *saveCtx) disarm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
}

// stop releases the timer; the run is over.
func (s *saveCtx) stop() { s.disarm() }

// expire ends the armed save when its deadline has passed; a firing of a
// timer armed for an earlier save, late, finds a later deadline and does
// nothing.
func (s *saveCtx) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil && s.done != nil && !time.Now().Before(s.deadline) {
		s.err = context.DeadlineExceeded
		close(s.done)
	}
}

func (s *saveCtx) Deadline() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline, true
}

func (s *saveCtx) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

func (s *saveCtx) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *saveCtx) Value(key any) any { return s.values.Value(key) }
