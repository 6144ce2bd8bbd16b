package session

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

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
