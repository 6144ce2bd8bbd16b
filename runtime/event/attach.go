package event

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/corral-rt/corral/fault"
)

// attachment is one sink attached to a router. Its subs map (one
// subscription per bus) is guarded by the router's mu.
type attachment struct {
	r       *Router
	ctx     context.Context
	cancel  context.CancelCauseFunc
	pattern string
	sink    Sink
	cfg     attachConfig
	subs    map[Bus]Subscription
	changed chan struct{} // signalled when subs changes
	// removed are subscriptions of buses RemoveBus took away, closed but
	// maybe still holding queued envelopes: the goroutine delivers those
	// before it forgets them (guarded by r.mu).
	removed []Subscription
}

// Attach subscribes sink to pattern on every bus of the router, now and
// later, and delivers the matching envelopes to it from one goroutine, in
// order per bus. The attachment ends when detach is called (detach is
// idempotent and does not wait for a sink call in flight), when ctx ends,
// when the sink returns an error (only this attachment ends; see
// WithOnDetach), or when the router closes. A bus that closes on its own
// ends the attachment's subscription there; the others carry on.
//
// A nil ctx or sink, or invalid options, is a Validation error; an invalid
// pattern is ErrInvalidPattern; an ended ctx is Aborted or Timeout; after
// Close it returns ErrRouterClosed.
func (r *Router) Attach(ctx context.Context, pattern string, sink Sink, opts ...AttachOption) (detach func(), err error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "attach", "ctx must not be nil")
	}
	if sink == nil {
		return nil, fault.New(fault.Validation, "attach", "sink must not be nil")
	}
	if err := ValidatePattern(pattern); err != nil {
		return nil, err
	}
	cfg := attachConfig{backpressure: r.defaultBackpressure}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if _, err := ResolveSubConfig(DefaultBufferSize, cfg.subConfig()); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "attach", "%q", pattern)
	}
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, "attach "+pattern)
	}
	a := &attachment{r: r, pattern: pattern, sink: sink, cfg: cfg,
		subs: map[Bus]Subscription{}, changed: make(chan struct{}, 1)}
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	if err := r.start(a); err != nil {
		a.cancel(errDetached)
		return nil, err
	}
	return func() { a.cancel(errDetached) }, nil
}

// start subscribes a on every bus and starts its goroutine. A bus that is
// closed is skipped; any other failure undoes the subscriptions made.
func (r *Router) start(a *attachment) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrRouterClosed
	}
	for _, bus := range r.buses {
		sub, err := a.subscribe(bus)
		if errors.Is(err, ErrBusClosed) {
			continue
		}
		if err != nil {
			a.closeSubsLocked()
			return fault.Wrap(fault.KindOr(err, fault.Internal), err, "attach", "%q", a.pattern)
		}
		a.subs[bus] = sub
	}
	r.atts[a] = struct{}{}
	r.wg.Add(1)
	go a.run()
	return nil
}

func (c attachConfig) subConfig() SubConfig {
	return SubConfig{BufferSize: c.bufferSize, Backpressure: c.backpressure}
}

func (a *attachment) subscribe(bus Bus) (Subscription, error) {
	return bus.Subscribe(a.ctx, a.pattern, a.cfg.subConfig())
}

// notify wakes the goroutine to pick up a changed set of subscriptions.
func (a *attachment) notify() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

func (a *attachment) closeSubsLocked() {
	for bus, sub := range a.subs {
		_ = sub.Close()
		delete(a.subs, bus)
	}
}

// run is the attachment's goroutine: it receives from every subscription
// and calls the sink until the attachment ends, then cleans up.
func (a *attachment) run() {
	defer a.r.wg.Done()
	cause := a.loop()
	if cause != nil {
		a.cancel(cause)
	} else {
		a.cancel(errDetached)
	}
	a.r.mu.Lock()
	a.closeSubsLocked()
	delete(a.r.atts, a)
	a.r.mu.Unlock()
	if cause != nil && a.cfg.onDetach != nil {
		a.cfg.onDetach(cause)
	}
}

// loop delivers until the attachment's ctx ends (nil) or the sink fails
// (its error).
func (a *attachment) loop() error {
	var sel selector
	sel.reset(a)
	for {
		i, env, ok := sel.wait()
		switch {
		case i == selDone:
			return nil
		case i == selChanged:
			if err := a.drainRemoved(); err != nil {
				return err
			}
			sel.reset(a)
		case !ok:
			a.dropSub(sel.buses[i], sel.subs[i])
			sel.reset(a)
		case a.ctx.Err() != nil:
			return nil
		default:
			if err := a.call(env); err != nil {
				return err
			}
		}
	}
}

// drainRemoved delivers what the subscriptions of removed buses still
// held when RemoveBus closed them: an envelope published before the
// removal is not lost. A closed subscription's channel closes once it is
// empty; the drain also ends with the attachment.
func (a *attachment) drainRemoved() error {
	a.r.mu.Lock()
	subs := a.removed
	a.removed = nil
	a.r.mu.Unlock()
	for _, sub := range subs {
		for {
			var env Envelope
			var ok bool
			select {
			case <-a.ctx.Done():
				return nil
			case env, ok = <-sub.C():
			}
			if !ok {
				break
			}
			if err := a.call(env); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropSub forgets a subscription whose channel closed (its bus closed).
func (a *attachment) dropSub(bus Bus, sub Subscription) {
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	if a.subs[bus] == sub {
		delete(a.subs, bus)
	}
}

// call runs the sink once; a panic becomes an Internal error.
func (a *attachment) call(env Envelope) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fault.New(fault.Internal, "event sink", "attachment %q: sink panicked: %v", a.pattern, p)
		}
	}()
	if err := a.sink.OnEvent(a.ctx, env); err != nil {
		return fmt.Errorf("event sink: attachment %q: %w", a.pattern, err)
	}
	return nil
}

// The special results of selector.wait.
const (
	selDone    = -1
	selChanged = -2
)

// selector waits on the attachment's ctx, its change signal and every
// subscription channel. One subscription, the common case, uses a plain
// select; more use reflect.Select.
type selector struct {
	a     *attachment
	buses []Bus
	subs  []Subscription
	cases []reflect.SelectCase
}

func (s *selector) reset(a *attachment) {
	s.a = a
	s.buses, s.subs = s.buses[:0], s.subs[:0]
	a.r.mu.Lock()
	for _, bus := range a.r.buses {
		if sub, ok := a.subs[bus]; ok {
			s.buses = append(s.buses, bus)
			s.subs = append(s.subs, sub)
		}
	}
	a.r.mu.Unlock()
	s.cases = s.cases[:0]
	if len(s.subs) > 1 {
		s.cases = append(s.cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(a.ctx.Done())},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(a.changed)})
		for _, sub := range s.subs {
			s.cases = append(s.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(sub.C())})
		}
	}
}

// wait returns the index of the subscription that delivered (or closed,
// with ok false), selDone or selChanged.
func (s *selector) wait() (i int, env Envelope, ok bool) {
	switch len(s.subs) {
	case 0:
		select {
		case <-s.a.ctx.Done():
			return selDone, env, false
		case <-s.a.changed:
			return selChanged, env, false
		}
	case 1:
		select {
		case <-s.a.ctx.Done():
			return selDone, env, false
		case <-s.a.changed:
			return selChanged, env, false
		case env, ok = <-s.subs[0].C():
			return 0, env, ok
		}
	}
	chosen, v, ok := reflect.Select(s.cases)
	switch chosen {
	case 0:
		return selDone, env, false
	case 1:
		return selChanged, env, false
	}
	if ok {
		env = v.Interface().(Envelope)
	}
	return chosen - 2, env, ok
}

// Sink receives the envelopes of an attachment (see Router.Attach). The
// router calls OnEvent from one goroutine per attachment, in order; an
// error detaches that attachment. ctx is the attachment's: it ends when the
// attachment does.
type Sink interface {
	OnEvent(ctx context.Context, env Envelope) error
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(ctx context.Context, env Envelope) error

// OnEvent calls f.
func (f SinkFunc) OnEvent(ctx context.Context, env Envelope) error { return f(ctx, env) }

var _ Sink = SinkFunc(nil)

// AttachOption configures one attachment.
type AttachOption func(*attachConfig)

type attachConfig struct {
	backpressure Backpressure
	bufferSize   int
	onDetach     func(error)
}

// WithAttachBackpressure sets the attachment's backpressure policy on every
// bus. The default is the router's (DropNewest unless
// RouterConfig.DefaultAttachBackpressure says otherwise).
func WithAttachBackpressure(p Backpressure) AttachOption {
	return func(c *attachConfig) { c.backpressure = p }
}

// WithAttachBufferSize sets the buffer of the attachment's subscription on
// each bus. Zero keeps the default, 64; a negative size or one above
// MaxBufferSize makes Attach fail with a Validation error.
func WithAttachBufferSize(n int) AttachOption {
	return func(c *attachConfig) { c.bufferSize = n }
}

// WithOnDetach calls fn with the sink's error when a sink error detaches
// the attachment. It is not called for any other end (detach, ctx, Close).
// fn runs on the attachment's goroutine after it has stopped delivering.
func WithOnDetach(fn func(error)) AttachOption {
	return func(c *attachConfig) { c.onDetach = fn }
}
