package sandbox_test

import (
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
)

func TestLimitsTightenOnly(t *testing.T) {
	base := sandbox.DefaultLimits()
	loose := sandbox.Limits{WallTime: time.Hour, MemoryBytes: 1 << 40, MaxEvents: 1 << 20}
	assert.Equal(t, base, base.Tighten(loose), "an override can never loosen a limit")

	tight := sandbox.Limits{WallTime: time.Second, StackDepth: 10, MaxLogBytes: 1}
	got := base.Tighten(tight)
	assert.Equal(t, time.Second, got.WallTime)
	assert.Equal(t, 10, got.StackDepth)
	assert.Equal(t, int64(1), got.MaxLogBytes)
	assert.Equal(t, base.MemoryBytes, got.MemoryBytes, "unset fields keep the base value")

	assert.Equal(t, sandbox.DefaultLimits(), sandbox.Limits{}.WithDefaults())
	assert.Equal(t, 2*time.Second, sandbox.Limits{WallTime: 2 * time.Second}.WithDefaults().WallTime,
		"WithDefaults keeps a set value below the default")
	raised := sandbox.Limits{WallTime: time.Minute, MaxEvents: 5000}.WithDefaults()
	assert.Equal(t, time.Minute, raised.WallTime, "a runtime setting may raise a limit above its default")
	assert.Equal(t, 5000, raised.MaxEvents)
	assert.Equal(t, sandbox.DefaultMemoryBytes, int(raised.MemoryBytes), "unset fields get the default")
}

func TestLimitsValidate(t *testing.T) {
	assert.NoError(t, sandbox.DefaultLimits().Validate())
	assert.ErrorIs(t, sandbox.Limits{MaxEvents: -1}.Validate(), fault.Validation)
}

func TestLimitErrorKinds(t *testing.T) {
	wall := &sandbox.LimitError{Limit: sandbox.LimitWallTime, Node: "n1", Max: int64(time.Second)}
	assert.ErrorIs(t, wall, fault.Timeout)
	assert.EqualError(t, wall, `node "n1": wall_time limit of 1s exceeded`)
	mem := &sandbox.LimitError{Limit: sandbox.LimitMemory, Node: "n2", Max: 1024}
	assert.ErrorIs(t, mem, fault.BudgetExceeded)
	assert.NotErrorIs(t, mem, fault.Timeout)
	assert.EqualError(t, mem, `node "n2": memory_bytes limit of 1024 exceeded`)
}

// max_board_bytes has a default, tightens like every limit, and is
// refused when negative.
func TestLimitsBoardBytes(t *testing.T) {
	assert.Equal(t, int64(sandbox.DefaultMaxBoardBytes), sandbox.DefaultLimits().MaxBoardBytes)
	assert.Equal(t, int64(16<<20), sandbox.Limits{}.WithDefaults().MaxBoardBytes)
	assert.Equal(t, int64(1024), sandbox.DefaultLimits().Tighten(sandbox.Limits{MaxBoardBytes: 1024}).MaxBoardBytes)
	assert.Equal(t, int64(sandbox.DefaultMaxBoardBytes), sandbox.DefaultLimits().Tighten(sandbox.Limits{MaxBoardBytes: 1 << 40}).MaxBoardBytes)
	err := sandbox.Limits{MaxBoardBytes: -1}.Validate()
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, "max_board_bytes")
	board := &sandbox.LimitError{Limit: sandbox.LimitBoardBytes, Node: "n3", Max: 10}
	assert.ErrorIs(t, board, fault.BudgetExceeded)
	assert.EqualError(t, board, `node "n3": max_board_bytes limit of 10 exceeded`)
}
