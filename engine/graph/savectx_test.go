package graph

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type saveKey struct{}

// A save context runs out of time per save: it carries the run's values,
// ends with DeadlineExceeded when a save takes too long, and is live again
// for the next save; a disarmed save never ends.
func TestSaveCtx(t *testing.T) {
	t.Parallel()
	s := &saveCtx{values: context.WithValue(context.Background(), saveKey{}, "v")}
	defer s.stop()

	ctx := s.arm(time.Millisecond)
	assert.Equal(t, "v", ctx.Value(saveKey{}))
	_, ok := ctx.Deadline()
	assert.True(t, ok)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the save context never ran out of time")
	}
	require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)

	ended := ctx
	next := s.arm(time.Hour)
	require.NoError(t, next.Err(), "a new save is live again")
	require.ErrorIs(t, ended.Err(), context.DeadlineExceeded, "a context that ended stays ended")
	next.disarm()
	next.expire() // a late firing of an earlier timer
	require.NoError(t, next.Err(), "a firing before the deadline changes nothing")
	select {
	case <-next.Done():
		t.Fatal("a disarmed save ended")
	default:
	}
	next.stop()
}

// A context derived from a save's context (a store's WithCancel) may see
// the save's Done closed only after the next save began; the save it
// derived from must still say why it ended, or the context package
// panics ("missing cancel error").
func TestSaveCtxDerivedAfterRearm(t *testing.T) {
	t.Parallel()
	s := &saveCtx{values: context.Background()}
	ctx := s.arm(time.Nanosecond)
	<-ctx.Done()
	next := s.arm(time.Hour)
	defer next.stop()
	derived, cancel := context.WithCancel(ctx) // the parent is done: derived ends at once, with its Err
	defer cancel()
	select {
	case <-derived.Done():
	default:
		t.Fatal("a context derived from an ended save is live")
	}
	require.ErrorIs(t, derived.Err(), context.DeadlineExceeded)
}

// A save that never asks for Done still runs out of time: Err reads the
// clock, and a Done asked for afterwards is already closed.
func TestSaveCtxErrWithoutDone(t *testing.T) {
	t.Parallel()
	s := &saveCtx{values: context.Background()}
	defer s.stop()
	ctx := s.arm(time.Nanosecond)
	require.Eventually(t, func() bool { return ctx.Err() != nil }, 10*time.Second, time.Millisecond)
	require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Done of an expired save is not closed")
	}
	s.disarm()
	ctx = s.arm(time.Hour)
	defer ctx.stop()
	require.NoError(t, ctx.Err())
	select {
	case <-ctx.Done():
		t.Fatal("a new save starts ended")
	default:
	}
}
