package fault_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type placeErr struct{ line int }

func (p *placeErr) Error() string { return fmt.Sprintf("line %d", p.line) }

func TestKindsSurviveWrapping(t *testing.T) {
	t.Parallel()
	for _, k := range fault.Kinds() {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			base := fault.New(k, "deploy", "resource %q: kind is required", "bus")
			wrapped := fmt.Errorf("outer: %w", fmt.Errorf("middle: %w", base))
			joined := errors.Join(errors.New("other"), wrapped)
			for _, err := range []error{base, wrapped, joined} {
				assert.ErrorIs(t, err, k)
				assert.Equal(t, k, fault.KindOf(err))
				for _, other := range fault.Kinds() {
					if other != k {
						assert.NotErrorIs(t, err, other)
					}
				}
			}
			got, ok := fault.ParseKind(k.String())
			require.True(t, ok)
			assert.Same(t, k, got)
		})
	}
}

func TestErrorMessageAndCause(t *testing.T) {
	t.Parallel()
	cause := &placeErr{line: 7}
	err := fault.Wrap(fault.NotFound, cause, "load settings", "file %q", "a.yaml")
	assert.EqualError(t, err, `load settings: file "a.yaml": line 7`)
	var pe *placeErr
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 7, pe.line)
	assert.ErrorIs(t, err, fault.NotFound)
	assert.Nil(t, fault.Wrap(fault.Internal, nil, "x", "y"))
	assert.EqualError(t, fault.New(fault.Conflict, "", "already set"), "already set")
	assert.EqualError(t, &fault.Error{Kind: fault.Timeout}, "timeout")
	assert.Nil(t, fault.KindOf(errors.New("plain")))
	assert.Nil(t, fault.KindOf(nil))
	_, ok := fault.ParseKind("nope")
	assert.False(t, ok)
}

func TestSentinelMatchesItselfAndKind(t *testing.T) {
	t.Parallel()
	errClosed := fault.New(fault.NotAvailable, "event", "bus closed")
	err := fmt.Errorf("publish: %w", errClosed)
	assert.ErrorIs(t, err, errClosed)
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.NotErrorIs(t, fault.New(fault.NotAvailable, "event", "bus closed"), errClosed)
}

func TestFromContext(t *testing.T) {
	t.Parallel()
	err := fault.FromContext(context.DeadlineExceeded, "wait")
	assert.ErrorIs(t, err, fault.Timeout)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	err = fault.FromContext(fmt.Errorf("x: %w", context.Canceled), "wait")
	assert.ErrorIs(t, err, fault.Aborted)
	assert.ErrorIs(t, err, context.Canceled)
	kept := fault.New(fault.Interrupted, "run", "user_cancel")
	assert.Same(t, kept, fault.FromContext(kept, "wait"))
	plain := errors.New("plain")
	assert.Same(t, plain, fault.FromContext(plain, "wait"))
	assert.Nil(t, fault.FromContext(nil, "wait"))
}
