package proc

import (
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The script position of a host call's error crosses the wire: a replay
// names the line of a script that ran in a worker, and the error's text,
// kind and type stay the worker's.
func TestHostCallErrorCrossesTheWire(t *testing.T) {
	t.Parallel()
	inner := &sandbox.LimitError{Limit: "max_events", Node: "a", Max: 1}
	err := &sandbox.HostCallError{Where: "roll.js:3:5", Err: fault.Wrap(fault.BudgetExceeded, inner, "host emit", "")}
	back := decodeError(encodeError(err))
	var hc *sandbox.HostCallError
	require.True(t, errors.As(back, &hc))
	assert.Equal(t, "roll.js:3:5", hc.Where)
	assert.Equal(t, err.Error(), back.Error())
	assert.True(t, fault.Is(back, fault.BudgetExceeded))
	var le *sandbox.LimitError
	assert.True(t, errors.As(back, &le))
	_, plain := decodeError(encodeError(fault.New(fault.Validation, "x", "y"))).(*sandbox.HostCallError)
	assert.False(t, plain, "an error without a position gets none")
}
