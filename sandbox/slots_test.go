package sandbox_test

import (
	"context"
	"testing"

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
