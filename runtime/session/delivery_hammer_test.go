package session

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamHammer races publishers of plain, speculative and control
// deltas against acks, freezes, sinks that fail, time out or fill their
// queues, finalize and close, under -race; every stream must end with no
// sink attached and no goroutine left behind.
//
// REF 2.4.1
// REF 2.4.2
// REF 2.4.6
// REF 2.4.15
func TestStreamHammer(t *testing.T) { // not parallel: counts goroutines
	checkGoroutines(t)
	rounds := 60
	if testing.Short() {
		rounds = 10
	}
	bus := event.NewMemoryBus()
	defer func() { _ = bus.Close() }()
	for i := range rounds {
		hammerRound(t, bus, fmt.Sprintf("run-%016x", i), i%3 == 0)
	}
	assert.Zero(t, bus.Subscriptions())
}

func hammerRound(t *testing.T, bus *event.MemoryBus, run string, racingClose bool) {
	var s *stream
	var started atomic.Bool
	specs := hammerSinks(&s, &started)
	var changes atomic.Int64
	cfg := streamConfig{runID: run, speculativeEvents: 64, finalizeBudget: 2 * time.Second,
		onChange: func() { changes.Add(1); _ = s.attached() }}
	s, err := startStream(context.Background(), bus, cfg, specs)
	require.NoError(t, err)
	started.Store(true)

	var wg sync.WaitGroup
	for p := range 3 {
		wg.Go(func() { hammerPublish(t, bus, run, fmt.Sprintf("b%d", p)) })
	}
	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Go(func() {
		for c := uint64(1); ; c++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = s.ack("ui", c%50+1)
			_, _ = s.acknowledgedPrefix()
			_ = s.attached()
			if c == 40 {
				s.freeze()
			}
		}
	})
	wg.Wait()
	publish(t, bus, event.SubjectRunEnd(run), event.RunPayload{Graph: "g"})
	if racingClose {
		side.Go(s.close)
	}
	_ = s.finalize(context.Background(), 1, agent.StatusCompleted, nil)
	close(stop)
	side.Wait()
	s.close()
	assert.Zero(t, s.attached())
}

// hammerSinks returns an explicit-ack sink that acks from inside OnDelta
// half the time, and sinks that now and then fail, time out or fill their
// one-slot queue.
func hammerSinks(s **stream, started *atomic.Bool) []SinkSpec {
	ackSink := agent.StreamSinkFunc(func(_ context.Context, env event.Envelope, _ event.StreamDeltaPayload) error {
		if c, err := DeliveryCursorFromEnvelope(env); err == nil && started.Load() && rand.IntN(2) == 0 {
			_ = (*s).ack("ui", c)
		}
		return nil
	})
	flaky := agent.StreamSinkFunc(func(ctx context.Context, _ event.Envelope, _ event.StreamDeltaPayload) error {
		switch rand.IntN(200) {
		case 0:
			return errors.New("flaky")
		case 1:
			<-ctx.Done() // runs into its delivery timeout
		}
		return nil
	})
	return []SinkSpec{
		{ID: "ui", Sink: ackSink, Visibility: VisibilityConfirmed, Authority: AuthorityAuthoritative, AckMode: AckExplicit, MaxUnacked: 64},
		{ID: "raw", Sink: flaky, DeliveryTimeout: 5 * time.Millisecond},
		{ID: "conf", Sink: flaky, Visibility: VisibilityConfirmed, DeliveryTimeout: 5 * time.Millisecond},
		{ID: "tiny", Sink: flaky, QueueSize: 1, OnDetach: func(error) {}},
	}
}

func hammerPublish(t *testing.T, bus *event.MemoryBus, run, branch string) {
	for i := range 40 {
		var d event.StreamDeltaPayload
		switch i % 10 {
		case 9:
			d = control(event.DeltaParallelBranchAccept, "f"+fmt.Sprint(i/10), branch)
			if rand.IntN(2) == 0 {
				d.Type = event.DeltaParallelBranchCancel
			}
		case 0, 1, 2:
			d = textDelta("t")
		default:
			d = specDelta("f"+fmt.Sprint(i/10), branch, "s")
		}
		publish(t, bus, event.SubjectStreamDelta(run, "x"), d)
	}
}

// publish may run on any goroutine, so it reports with assert.
func publish(t *testing.T, bus event.Bus, subject string, payload any) {
	env, err := event.NewEnvelope(context.Background(), subject, payload)
	if assert.NoError(t, err) {
		assert.NoError(t, bus.Publish(context.Background(), env))
	}
}
