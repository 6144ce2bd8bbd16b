package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// streamConfig configures one turn's stream. Zero values take the
// defaults of the sessions section: sink buffer 256, delivery concurrency
// 8, speculative buffer 1024 events and 1 MiB, finalize budget 5 s, a
// logger that discards.
type streamConfig struct {
	runID      string // required
	sinkBuffer int    // queue size of a sink whose QueueSize is 0
	// deliveryConcurrency caps the OnDelta calls of one sink in flight
	// (REF 2.4.3). A sink's calls are made one at a time, so that it
	// sees the run in bus order (REF 2.4.7): the cap always holds.
	deliveryConcurrency int
	speculativeEvents   int           // held speculative deltas, and branch states, at most
	speculativeBytes    int           // payload bytes of held speculative deltas at most
	finalizeBudget      time.Duration // how long finalize waits for the engine's run-ends
	logger              *slog.Logger
	// onChange, when set, is called after the number of attached sinks
	// changed. It may be called from several goroutines at once and more
	// often than needed, never while the stream holds a lock.
	onChange func()
}

func (c streamConfig) withDefaults() streamConfig {
	d := DefaultTunables()
	c.sinkBuffer = positiveOr(c.sinkBuffer, d.SinkBuffer)
	c.deliveryConcurrency = positiveOr(c.deliveryConcurrency, d.DeliveryConcurrency)
	c.speculativeEvents = positiveOr(c.speculativeEvents, d.SpeculativeBufferEvents)
	c.speculativeBytes = positiveOr(c.speculativeBytes, d.SpeculativeBufferBytes)
	c.finalizeBudget = positiveOr(c.finalizeBudget, defaultFinalizeBudget)
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func positiveOr[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// stream is the stream coordinator of one turn (REF 2.4). It
// subscribes to every event of the run with Block backpressure, so it
// loses nothing, and one coordinator goroutine routes each envelope, in bus
// order, to the raw sinks and through the confirmed stream to the
// confirmed sinks. Each sink has its own queue and delivery goroutine.
//
// Lock order: stream.mu, then sinkQueue.mu, then authority.mu. No
// lock is held while a sink, OnDetach or onChange runs.
type stream struct {
	cfg       streamConfig
	log       *slog.Logger
	runEnd    string // subject of the engine's run-ends
	sinks     []*sinkQueue
	raw       []*sinkQueue
	confirmed []*sinkQueue
	auth      authority

	sub       event.Subscription // nil when the turn has no sinks
	subCancel context.CancelFunc
	coordDone chan struct{}
	stopOnce  sync.Once

	live    atomic.Int64  // sinks still attached
	changed atomic.Bool   // live changed since onChange last ran
	wake    chan struct{} // a run-end, a sink leaving, or the subscription ending

	mu         sync.Mutex
	cs         *confirmedStream
	runEnds    int  // engine run-ends seen
	subEnded   bool // the subscription closed on its own (the bus closed)
	finalized  bool // envelopes are no longer routed
	runEndSent bool
}

// startStream validates the sinks, subscribes to agent.run.<run>.> on bus
// and starts the coordinator and one delivery goroutine per sink. With no
// sinks it subscribes to nothing and starts nothing. The subscription
// outlives ctx's cancellation (the engine's run-ends arrive after a
// cancel); finalize or close ends it.
func startStream(ctx context.Context, bus event.Bus, cfg streamConfig, specs []SinkSpec) (*stream, error) {
	switch {
	case ctx == nil:
		return nil, fault.New(fault.Validation, "start stream", "ctx must not be nil")
	case bus == nil:
		return nil, fault.New(fault.Validation, "start stream", "bus must not be nil")
	case cfg.runID == "":
		return nil, fault.New(fault.Validation, "start stream", "run id is required")
	}
	if err := ValidateSinks(specs); err != nil {
		return nil, err
	}
	s := newStream(cfg.withDefaults(), specs)
	if len(specs) == 0 {
		close(s.coordDone)
		return s, nil
	}
	subCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sub, err := bus.Subscribe(subCtx, event.PatternRun(cfg.runID), event.SubConfig{Backpressure: event.Block})
	if err != nil {
		cancel()
		return nil, fault.Wrap(fault.KindOf(err), err, "start stream", "subscribe to run %s", cfg.runID)
	}
	s.sub, s.subCancel = sub, cancel
	for _, q := range s.sinks {
		go q.run()
	}
	go s.coordinate()
	return s, nil
}

func newStream(cfg streamConfig, specs []SinkSpec) *stream {
	s := &stream{
		cfg: cfg, runEnd: event.SubjectRunEnd(cfg.runID),
		log:       cfg.logger.With(slog.String("run_id", cfg.runID)),
		coordDone: make(chan struct{}),
		wake:      make(chan struct{}, 1),
		cs:        newConfirmedStream(cfg.speculativeEvents, cfg.speculativeBytes),
	}
	for _, spec := range specs {
		size := positiveOr(spec.QueueSize, cfg.sinkBuffer)
		q := newSinkQueue(s, spec, size)
		s.sinks = append(s.sinks, q)
		if q.confirmed {
			s.confirmed = append(s.confirmed, q)
		} else {
			s.raw = append(s.raw, q)
		}
		if q.authoritative {
			s.auth.init(spec, size)
		}
	}
	s.live.Store(int64(len(s.sinks)))
	return s
}

// coordinate reads the subscription until it closes.
func (s *stream) coordinate() {
	defer close(s.coordDone)
	for env := range s.sub.C() {
		s.route(env)
		s.flushChange()
	}
	s.mu.Lock()
	s.subEnded = true
	s.mu.Unlock()
	s.signal()
}

// route sends one envelope of the run where it belongs. The engine's
// run-ends only mark attempts (REF 2.4.11); every other envelope goes
// to the raw sinks as it is (REF 2.4.7) and through the confirmed
// stream (REF 2.4.8).
func (s *stream) route(env event.Envelope) {
	delta, decodeErr := decodeDelta(env)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finalized {
		return
	}
	if env.Subject == s.runEnd {
		s.endAttemptLocked()
		return
	}
	for _, q := range s.raw {
		q.enqueue(sinkItem{env: env, delta: delta})
	}
	if len(s.confirmed) == 0 || s.cs.dead() {
		return
	}
	if decodeErr != nil {
		s.failConfirmedLocked(decodeErr)
		return
	}
	if err := s.cs.offer(env, delta, s.emitLocked); err != nil {
		s.failConfirmedLocked(err)
	}
}

// decodeDelta decodes a stream delta's payload; other envelopes carry an
// empty delta. A delta that does not decode is returned empty, with the
// error.
func decodeDelta(env event.Envelope) (event.StreamDeltaPayload, error) {
	var d event.StreamDeltaPayload
	if !event.IsStreamDelta(env.Subject) {
		return d, nil
	}
	if err := env.Decode(&d); err != nil {
		return event.StreamDeltaPayload{}, err
	}
	return d, nil
}

// emitLocked queues one confirmed emission for every confirmed sink.
func (s *stream) emitLocked(env event.Envelope, delta event.StreamDeltaPayload, cursor uint64) {
	s.auth.record(s.runEnds+1, cursor, delta)
	for _, q := range s.confirmed {
		q.enqueue(sinkItem{env: env, delta: delta, cursor: cursor})
	}
}

// endAttemptLocked counts one engine run-end: a branch still open is a
// protocol violation (REF 2.4.10).
func (s *stream) endAttemptLocked() {
	s.runEnds++
	if err := s.cs.endAttempt(); err != nil {
		s.failConfirmedLocked(err)
	}
	s.signal()
}

// failConfirmedLocked kills the confirmed stream: every confirmed sink is
// detached with err, and raw sinks carry on (REF 2.4.9, 2.4.10).
func (s *stream) failConfirmedLocked(err error) {
	if !s.cs.dead() {
		s.cs.fail(err)
	}
	s.log.Warn("confirmed stream failed; confirmed sinks detached", slog.Any("error", err))
	for _, q := range s.confirmed {
		q.leave(err)
	}
}

// sinkLeft is called once per sink as it leaves the turn, after the
// attached count dropped.
func (s *stream) sinkLeft(q *sinkQueue, err error) {
	switch {
	case err == nil:
	case errors.Is(err, fault.Aborted): // the stream was closed or ended
		s.log.Debug("stream sink detached", slog.String("sink", q.spec.ID), slog.Any("error", err))
	default:
		s.log.Warn("stream sink detached", slog.String("sink", q.spec.ID), slog.Any("error", err))
	}
	s.signal()
}

func (s *stream) callOnDetach(id string, f func(error), err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Warn("sink OnDetach panicked", slog.String("sink", id), slog.Any("panic", r))
		}
	}()
	f(err)
}

func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// flushChange calls onChange when the attached count changed. Callers
// hold no lock.
func (s *stream) flushChange() {
	if s.changed.Swap(false) && s.cfg.onChange != nil {
		s.cfg.onChange()
	}
}

// attached returns the number of sinks still attached: neither detached
// nor completed by the run-end.
func (s *stream) attached() int { return int(s.live.Load()) }

// close detaches every sink that is still attached, ends the subscription
// and waits for the goroutines it started (see shutdown). It is idempotent
// and may run concurrently with finalize.
func (s *stream) close() {
	s.shutdown(fault.New(fault.Aborted, "stream", "stream of run %s closed", s.cfg.runID))
}

// shutdown detaches what is still attached with cause, stops routing,
// ends the subscription and waits for the coordinator and for every
// delivery goroutine, except one still inside an OnDelta call that was cut
// short: that goroutine ends when the call returns and calls nothing more.
func (s *stream) shutdown(cause error) {
	if cause == nil {
		cause = errStreamEnded(s.cfg.runID)
	}
	s.detachAll(cause)
	s.mu.Lock()
	s.finalized = true
	s.mu.Unlock()
	s.stopOnce.Do(func() {
		if s.sub != nil {
			s.subCancel()
			_ = s.sub.Close()
		}
		<-s.coordDone
	})
	for _, q := range s.sinks {
		_ = q.wait(context.Background())
	}
	s.flushChange()
}

// detachAll detaches every sink still attached with err.
func (s *stream) detachAll(err error) {
	for _, q := range s.sinks {
		q.leave(err)
	}
}

// finalize ends the turn's stream after the engine returned (REF
// 2.4.5, 2.4.6, 2.4.11 to 2.4.13):
//
//   - with no sink attached it returns at once;
//   - when runErr carries a RunEndPublishError, every sink is detached with
//     it (no run-end is coming);
//   - otherwise it waits until attempts engine run-ends have been seen
//     (none when attempts <= 0: the engine never ran), for at most the
//     finalize budget. When the budget or ctx
//     runs out, or the bus closes first, every sink is detached and the
//     error is returned: the turn records it as session.finalize_error;
//   - then every sink gets one logical run-end, RunEndPayload{status,
//     runErr}, last; and finalize waits until each sink has delivered it
//     or was detached (bounded by ctx: when ctx ends first the rest are
//     detached and the ctx error is returned).
//
// In every case the subscription ends and the stream's goroutines are
// stopped before it returns (see shutdown).
func (s *stream) finalize(ctx context.Context, attempts int, status agent.Status, runErr error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if s.attached() == 0 {
		s.shutdown(errStreamEnded(s.cfg.runID))
		return nil
	}
	if rep, ok := runEndPublishError(runErr); ok {
		s.shutdown(rep)
		return nil
	}
	if err := s.awaitRunEnds(ctx, attempts); err != nil {
		s.log.Warn("stream finalize gave up waiting for the engine's run-end; sinks detached", slog.Any("error", err))
		s.shutdown(err)
		return err
	}
	s.sendRunEnd(status, runErr)
	var err error
	for _, q := range s.sinks {
		if werr := q.wait(ctx); werr != nil {
			err = ctxError(werr, "finalize stream", "run %s: wait for sinks to drain", s.cfg.runID)
			break
		}
	}
	s.shutdown(err)
	return err
}

func errStreamEnded(runID string) error {
	return fault.New(fault.Aborted, "stream", "stream of run %s ended", runID)
}

// awaitRunEnds waits until n engine run-ends were routed, or no sink is
// left to deliver to.
func (s *stream) awaitRunEnds(ctx context.Context, n int) error {
	budget := time.NewTimer(s.cfg.finalizeBudget)
	defer budget.Stop()
	for {
		s.mu.Lock()
		seen, ended := s.runEnds, s.subEnded
		s.mu.Unlock()
		switch {
		case seen >= n || s.attached() == 0:
			return nil
		case ended:
			return fault.New(fault.NotAvailable, "finalize stream",
				"run %s: the subscription ended (bus closed) after %d of %d engine run-ends", s.cfg.runID, seen, n)
		}
		select {
		case <-s.wake:
		case <-budget.C:
			return fault.New(fault.Timeout, "finalize stream",
				"run %s: %d of %d engine run-ends seen within %s", s.cfg.runID, seen, n, s.cfg.finalizeBudget)
		case <-ctx.Done():
			return ctxError(ctx.Err(), "finalize stream", "run %s: wait for %d engine run-ends, %d seen", s.cfg.runID, n, seen)
		}
	}
}

// sendRunEnd queues the logical run-end for every sink still attached, the
// confirmed ones with the next cursor, and stops routing.
func (s *stream) sendRunEnd(status agent.Status, runErr error) {
	p := RunEndPayload{Status: status}
	if runErr != nil {
		p.Error = runErr.Error()
	}
	env, err := event.NewEnvelope(context.Background(), s.runEnd, p)
	if err != nil { // the subject and payload are the stream's own
		s.detachAll(fault.Wrap(fault.Internal, err, "finalize stream", "build run-end"))
		return
	}
	env.Headers = map[string]string{event.HeaderRunID: s.cfg.runID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finalized || s.runEndSent {
		return
	}
	s.finalized, s.runEndSent = true, true
	end := sinkItem{env: env, runEnd: true}
	for _, q := range s.raw {
		q.enqueue(end)
	}
	if len(s.confirmed) == 0 || s.cs.dead() {
		return
	}
	// Not recorded with the authority: the run-end carries no text and
	// belongs to no attempt.
	_ = s.cs.offer(env, event.StreamDeltaPayload{}, func(env event.Envelope, delta event.StreamDeltaPayload, cursor uint64) {
		for _, q := range s.confirmed {
			q.enqueue(sinkItem{env: env, delta: delta, cursor: cursor, runEnd: true})
		}
	})
}

// ctxError wraps a context error with Timeout for a deadline and Aborted
// otherwise.
func ctxError(err error, op, format string, args ...any) error {
	k := fault.Aborted
	if errors.Is(err, context.DeadlineExceeded) {
		k = fault.Timeout
	}
	return fault.Wrap(k, err, op, format, args...)
}
