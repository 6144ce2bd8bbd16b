package sandbox

import (
	"fmt"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/limit"
)

// Limits bound one node call: see package runtime/limit, which defines
// them below the sandbox so that contracts which hand limits down without
// running scripts (tool.Batch) need not import it.
type Limits = limit.Limits

// Defaults: what a document that sets no limits still gets.
const (
	DefaultWallTime      = limit.DefaultWallTime
	DefaultRunTime       = limit.DefaultRunTime
	DefaultMemoryBytes   = limit.DefaultMemoryBytes
	DefaultStackDepth    = limit.DefaultStackDepth
	DefaultMaxValueBytes = limit.DefaultMaxValueBytes
	DefaultMaxEvents     = limit.DefaultMaxEvents
	DefaultMaxEventBytes = limit.DefaultMaxEventBytes
	DefaultMaxLogBytes   = limit.DefaultMaxLogBytes
	DefaultMaxBoardBytes = limit.DefaultMaxBoardBytes
)

// DefaultLimits returns the defaults (limit.Defaults).
func DefaultLimits() Limits { return limit.Defaults() }

// Limit names, as LimitError.Limit says them.
const (
	LimitWallTime   = "wall_time"
	LimitRunTime    = "run_time"
	LimitMemory     = "memory_bytes"
	LimitStack      = "stack_depth"
	LimitValueBytes = "max_value_bytes"
	LimitEvents     = "max_events"
	LimitEventBytes = "max_event_bytes"
	LimitLogBytes   = "max_log_bytes"
	LimitBoardBytes = "max_board_bytes"
	// LimitJournalBytes is the size of a run's journal of
	// non-deterministic host calls (hostabi.MaxJournalBytes).
	LimitJournalBytes = "max_journal_bytes"
)

// LimitError reports a limit a script hit. Its kind is Timeout for the
// wall-time and run-time limits and BudgetExceeded for the others.
type LimitError struct {
	Limit string // one of the Limit* names
	Node  string // the node whose call hit it
	Max   int64  // the limit's value (nanoseconds for times)
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitWallTime, LimitRunTime:
		return fmt.Sprintf("node %q: %s limit of %s exceeded", e.Node, e.Limit, time.Duration(e.Max))
	}
	return fmt.Sprintf("node %q: %s limit of %d exceeded", e.Node, e.Limit, e.Max)
}

// Unwrap gives the kind.
func (e *LimitError) Unwrap() error {
	if e.Limit == LimitWallTime || e.Limit == LimitRunTime {
		return fault.Timeout
	}
	return fault.BudgetExceeded
}
