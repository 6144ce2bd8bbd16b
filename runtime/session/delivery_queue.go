package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
)

// sinkItem is one envelope queued for one sink.
type sinkItem struct {
	env    event.Envelope
	delta  event.StreamDeltaPayload
	cursor uint64 // the delivery cursor; 0 on the raw stream
	runEnd bool   // the logical run-end: delivering it completes the sink
}

// sinkQueue is one attached sink: a bounded queue filled by the stream
// without ever blocking, and one delivery goroutine that calls OnDelta for
// each item, one call at a time, in queue order (REF 2.4.1, 2.4.3,
// 2.4.7).
//
// Each call gets a ctx that ends at the sink's delivery timeout or when the
// sink leaves the turn. A watcher on that ctx detaches the sink at the
// deadline even when the sink ignores its ctx, and marks the call
// abandoned so that nobody waits for it: the delivery goroutine then ends
// as soon as the call returns and makes no further call.
type sinkQueue struct {
	st            *stream
	spec          SinkSpec
	timeout       time.Duration
	authoritative bool
	confirmed     bool
	items         chan sinkItem

	ctx    context.Context // ends when the sink leaves the turn
	cancel context.CancelFunc

	done        chan struct{} // closed when the delivery goroutine returns
	abandoned   chan struct{} // closed when an in-flight call was cut short
	abandonOnce sync.Once

	mu   sync.Mutex
	left bool // detached, or completed by the run-end
}

func newSinkQueue(st *stream, spec SinkSpec, size int) *sinkQueue {
	ctx, cancel := context.WithCancel(context.Background())
	timeout := spec.DeliveryTimeout
	if timeout == 0 {
		timeout = defaultDeliveryTimeout
	}
	return &sinkQueue{
		st: st, spec: spec, timeout: timeout,
		authoritative: spec.Authority == AuthorityAuthoritative,
		confirmed:     spec.Visibility == VisibilityConfirmed,
		items:         make(chan sinkItem, size),
		ctx:           ctx, cancel: cancel,
		done: make(chan struct{}), abandoned: make(chan struct{}),
	}
}

// enqueue queues it without blocking. A full queue detaches the sink with
// ErrSinkQueueFull (REF 2.4.2); a sink that has left drops it.
func (q *sinkQueue) enqueue(it sinkItem) {
	q.mu.Lock()
	if q.left {
		q.mu.Unlock()
		return
	}
	select {
	case q.items <- it:
		q.mu.Unlock()
		return
	default:
	}
	q.mu.Unlock()
	q.leave(fault.Wrap(fault.BudgetExceeded, ErrSinkQueueFull, "deliver",
		"sink %q, %d envelopes queued", q.spec.ID, cap(q.items)))
}

// run is the delivery goroutine.
func (q *sinkQueue) run() {
	defer close(q.done)
	for {
		select {
		case <-q.ctx.Done():
			return
		case it := <-q.items:
			if !q.deliver(it) {
				q.st.flushChange()
				return
			}
		}
	}
}

// deliver makes one call and reports whether the sink stays attached.
func (q *sinkQueue) deliver(it sinkItem) bool {
	if q.ctx.Err() != nil {
		return false
	}
	auth := q.authoritative && it.cursor > 0
	if auth {
		q.st.auth.offer(it.cursor)
	}
	if err := q.call(it); err != nil {
		q.leave(err)
		return false
	}
	if auth {
		if err := q.st.auth.deliver(it.cursor); err != nil {
			q.leave(err)
			return false
		}
	}
	if it.runEnd {
		q.leave(nil)
		return false
	}
	return true
}

// call runs OnDelta under the delivery timeout (REF 2.4.4); a panic
// in OnDelta detaches the sink with an Internal error. A call
// whose ctx ended, because the sink left the turn before or during it,
// does not count as delivered.
func (q *sinkQueue) call(it sinkItem) error {
	ctx, cancel := context.WithTimeout(q.ctx, q.timeout)
	defer cancel()
	var err error
	if ctx.Err() == nil {
		stop := context.AfterFunc(ctx, func() { q.cutShort(ctx) })
		err = q.onDelta(ctx, it)
		stop()
	}
	var panicked *sinkPanic
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return q.timeoutError()
	case errors.As(err, &panicked):
		return fault.New(fault.Internal, "deliver", "sink %q: OnDelta panicked: %v", q.spec.ID, panicked.v)
	case err != nil:
		return fmt.Errorf("deliver to sink %q: %w", q.spec.ID, err)
	}
	return ctx.Err()
}

// sinkPanic carries a value recovered from OnDelta.
type sinkPanic struct{ v any }

func (p *sinkPanic) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// onDelta calls the sink, turning a panic into a *sinkPanic error so that
// the delivery goroutine and the call's cleanup carry on (REF 2.4.4).
func (q *sinkQueue) onDelta(ctx context.Context, it sinkItem) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &sinkPanic{v: r}
		}
	}()
	return q.spec.Sink.OnDelta(ctx, it.env, it.delta)
}

// cutShort runs when a call's ctx ends before the call returned: at the
// deadline it detaches the sink; in every case nobody waits for the call.
func (q *sinkQueue) cutShort(ctx context.Context) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		q.leave(q.timeoutError())
	}
	q.abandonOnce.Do(func() { close(q.abandoned) })
	q.st.flushChange()
}

func (q *sinkQueue) timeoutError() error {
	return fault.Wrap(fault.Timeout, context.DeadlineExceeded, "deliver",
		"sink %q: OnDelta ran past its delivery timeout of %s", q.spec.ID, q.timeout)
}

// leave detaches the sink with err, or completes it when err is nil. Only
// the first call counts. It never takes the stream's lock, so the stream
// may call it while holding that lock.
func (q *sinkQueue) leave(err error) {
	q.mu.Lock()
	if q.left {
		q.mu.Unlock()
		return
	}
	q.left = true
	// Counted and frozen together with left, so that attached() never
	// counts a sink that has left and no ack lands after the detach.
	q.st.live.Add(-1)
	q.st.changed.Store(true)
	if q.authoritative {
		q.st.auth.freeze()
	}
	q.mu.Unlock()
	q.cancel()
	q.st.sinkLeft(q, err)
	if f := q.spec.OnDetach; f != nil {
		go q.st.callOnDetach(q.spec.ID, f, err)
	}
}

// wait returns once the delivery goroutine has returned or its in-flight
// call was cut short, or when ctx ends.
func (q *sinkQueue) wait(ctx context.Context) error {
	select {
	case <-q.done:
	case <-q.abandoned:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
