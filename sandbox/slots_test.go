package sandbox_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Slots admit Size calls at once; a waiting Take ends with its ctx or
// with ErrSlotsClosed when the runtime closes, and a left slot is free
// again.
func TestSlots(t *testing.T) {
	t.Parallel()
	closing := make(chan struct{})
	s := sandbox.NewSlots(1, closing)
	assert.Equal(t, 1, s.Size())
	require.NoError(t, s.Take(context.Background()))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, s.Take(ctx), context.Canceled, "the pool is full")

	s.Leave()
	require.NoError(t, s.Take(context.Background()), "a left slot is free again")

	close(closing)
	assert.ErrorIs(t, s.Take(context.Background()), sandbox.ErrSlotsClosed)
}

// Under contention, with waits that give up, no more than Size calls ever
// hold a slot, a waiting Take is served as slots are left, and every slot
// is free again at the end (a slot handed to a Take whose ctx ended is
// passed on, not lost).
func TestSlotsContention(t *testing.T) {
	t.Parallel()
	const size, workers, rounds = 2, 8, 500
	s := sandbox.NewSlots(size, make(chan struct{}))
	var holding, most atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if (i+w)%3 == 0 {
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(i%5)*time.Microsecond)
				}
				err := s.Take(ctx)
				cancel()
				if err != nil {
					assert.ErrorIs(t, err, context.DeadlineExceeded)
					continue
				}
				n := holding.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				runtime.Gosched()
				holding.Add(-1)
				s.Leave()
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, most.Load(), int64(size))
	assert.Equal(t, int64(size), most.Load(), "the slots were used")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range size {
		require.NoError(t, s.Take(ctx), "every slot is free again")
	}
}
