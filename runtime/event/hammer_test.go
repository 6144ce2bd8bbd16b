package event_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	hammerSubjects = []string{"h.a", "h.b", "h.a.x", "h.b.y.z", "other"}
	hammerPatterns = []string{"h.>", "h.*", "h.a", "*.b.>", ">", "h.*.x"}
	hammerPolicies = []event.Backpressure{event.DropNewest, event.DropOldest, event.Block, event.Sample}
)

// TestHammer races publishers, subscribers that close or cancel, router
// attachments that detach or fail, bus swaps and Close, under -race, and
// checks that no goroutine outlives the bus and the router.
//
// REF 4.3.1
// REF 4.3.3
// REF 4.3.7
// REF 1.5.4
func TestHammer(t *testing.T) { // not parallel: counts goroutines
	check := checkGoroutines(t)
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	buses := []*event.MemoryBus{event.NewMemoryBusWithConfig(event.BusConfig{RouteCacheSize: 3}), event.NewMemoryBus()}
	r := event.NewRouter()
	require.NoError(t, r.AddBus(buses[0]))
	var delivered atomic.Int64
	var wg, half sync.WaitGroup
	half.Add(6 + 3)
	stop := make(chan struct{})
	for i := range 6 {
		wg.Go(func() { hammerPublish(t, buses[i%2], stop) })
	}
	for range 6 {
		wg.Go(func() { hammerSubscribe(t, buses, rounds, &delivered, half.Done) })
	}
	for range 3 {
		wg.Go(func() { hammerAttach(t, r, rounds, &delivered, half.Done) })
	}
	wg.Go(func() { hammerSwap(t, r, buses, rounds) })

	// Close the buses under the workers once each is halfway through.
	half.Wait()
	closers := sync.WaitGroup{}
	for _, b := range buses {
		closers.Go(func() { assert.NoError(t, b.Close()) })
		closers.Go(func() { assert.NoError(t, b.Close()) })
	}
	closers.Wait()
	close(stop)
	wg.Wait()
	require.NoError(t, r.Close())
	t.Logf("delivered %d envelopes; dropped %d %d", delivered.Load(), buses[0].Dropped(), buses[1].Dropped())
	check()
}

func hammerPublish(t *testing.T, bus event.Bus, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		err := bus.Publish(ctx, event.Envelope{Subject: hammerSubjects[i%len(hammerSubjects)]})
		cancel()
		runtime.Gosched() // leave room for the subscribers on small machines
		if err != nil && !errors.Is(err, event.ErrBusClosed) && !errors.Is(err, context.DeadlineExceeded) {
			assert.NoError(t, err)
			return
		}
	}
}

func hammerSubscribe(t *testing.T, buses []*event.MemoryBus, rounds int, delivered *atomic.Int64, halfway func()) {
	halfway = sync.OnceFunc(halfway)
	defer halfway() // also when a failure ends the loop early
	for i := range rounds {
		if i == rounds/2 {
			halfway()
		}
		bus := buses[rand.IntN(len(buses))]
		ctx, cancel := context.WithCancel(context.Background())
		sub, err := bus.Subscribe(ctx, hammerPatterns[i%len(hammerPatterns)], event.SubConfig{BufferSize: 1 + rand.IntN(4), Backpressure: hammerPolicies[i%len(hammerPolicies)], SampleRate: 0.5})
		if err != nil {
			cancel()
			if !assert.ErrorIs(t, err, event.ErrBusClosed) {
				return
			}
			continue
		}
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for range sub.C() {
				delivered.Add(1)
			}
		}()
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		if i%2 == 0 {
			cancel()
		} else {
			assert.NoError(t, sub.Close())
			cancel()
		}
		<-drained // the channel closes in every case
	}
}

func hammerAttach(t *testing.T, r *event.Router, rounds int, delivered *atomic.Int64, halfway func()) {
	halfway = sync.OnceFunc(halfway)
	defer halfway() // also when a failure ends the loop early
	for i := range rounds {
		if i == rounds/2 {
			halfway()
		}
		ctx, cancel := context.WithCancel(context.Background())
		var n atomic.Int32
		sink := event.SinkFunc(func(context.Context, event.Envelope) error {
			delivered.Add(1)
			if n.Add(1) == 3 && i%3 == 0 {
				return fmt.Errorf("sink %d gives up", i)
			}
			return nil
		})
		detach, err := r.Attach(ctx, hammerPatterns[i%len(hammerPatterns)], sink,
			event.WithAttachBackpressure(hammerPolicies[i%len(hammerPolicies)]), event.WithAttachBufferSize(2))
		if err != nil {
			cancel()
			assert.NoError(t, err)
			return
		}
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		if i%2 == 0 {
			detach()
		}
		cancel()
	}
}

func hammerSwap(t *testing.T, r *event.Router, buses []*event.MemoryBus, rounds int) {
	for i := range rounds {
		b := buses[1]
		if i%2 == 1 {
			r.RemoveBus(b)
			continue
		}
		if err := r.AddBus(b); err != nil && !errors.Is(err, event.ErrBusClosed) {
			assert.NoError(t, err)
			return
		}
	}
}
