package limit

import (
	"time"

	"github.com/corral-rt/corral/fault"
)

// Limits bound one node call. The zero value of a field means "the
// default"; Defaults has every field set. Runtime settings may set
// limits; an agent may only tighten them (Tighten); a document never
// loosens them.
type Limits struct {
	WallTime      time.Duration `json:"wall_time,omitempty"`       // one node call, wall clock
	RunTime       time.Duration `json:"run_time,omitempty"`        // one whole run (enforced by the engine)
	MemoryBytes   int64         `json:"memory_bytes,omitempty"`    // memory a call may hold
	StackDepth    int           `json:"stack_depth,omitempty"`     // call-stack depth
	MaxValueBytes int64         `json:"max_value_bytes,omitempty"` // any value crossing the ABI or written to the board
	MaxEvents     int           `json:"max_events,omitempty"`      // events a call may publish or emit
	MaxEventBytes int64         `json:"max_event_bytes,omitempty"` // bytes of those events
	MaxLogBytes   int64         `json:"max_log_bytes,omitempty"`   // bytes a call may log
	MaxBoardBytes int64         `json:"max_board_bytes,omitempty"` // the board's size as JSON, checked on writes and after each wave
}

// Defaults: what a document that sets no limits still gets.
const (
	DefaultWallTime      = 5 * time.Second
	DefaultRunTime       = 2 * time.Minute
	DefaultMemoryBytes   = 64 << 20
	DefaultStackDepth    = 256
	DefaultMaxValueBytes = 1 << 20
	DefaultMaxEvents     = 1000
	DefaultMaxEventBytes = 4 << 20
	DefaultMaxLogBytes   = 64 << 10
	DefaultMaxBoardBytes = 16 << 20
)

// Defaults returns the defaults.
func Defaults() Limits {
	return Limits{
		WallTime: DefaultWallTime, RunTime: DefaultRunTime, MemoryBytes: DefaultMemoryBytes,
		StackDepth: DefaultStackDepth, MaxValueBytes: DefaultMaxValueBytes, MaxEvents: DefaultMaxEvents,
		MaxEventBytes: DefaultMaxEventBytes, MaxLogBytes: DefaultMaxLogBytes, MaxBoardBytes: DefaultMaxBoardBytes,
	}
}

// Validate refuses negative fields.
func (l Limits) Validate() error {
	for _, f := range l.fields() {
		if f.v < 0 {
			return fault.New(fault.Validation, "sandbox limits", "%s must be >= 0, got %d", f.name, f.v)
		}
	}
	return nil
}

// WithDefaults fills every zero field from Defaults and keeps every
// set field, even one above its default: the runtime's own settings may
// raise a limit, documents can only tighten it (Tighten).
func (l Limits) WithDefaults() Limits {
	d := Defaults()
	fill := func(v, def int64) int64 {
		if v == 0 {
			return def
		}
		return v
	}
	return Limits{
		WallTime:      time.Duration(fill(int64(l.WallTime), int64(d.WallTime))),
		RunTime:       time.Duration(fill(int64(l.RunTime), int64(d.RunTime))),
		MemoryBytes:   fill(l.MemoryBytes, d.MemoryBytes),
		StackDepth:    int(fill(int64(l.StackDepth), int64(d.StackDepth))),
		MaxValueBytes: fill(l.MaxValueBytes, d.MaxValueBytes),
		MaxEvents:     int(fill(int64(l.MaxEvents), int64(d.MaxEvents))),
		MaxEventBytes: fill(l.MaxEventBytes, d.MaxEventBytes),
		MaxLogBytes:   fill(l.MaxLogBytes, d.MaxLogBytes),
		MaxBoardBytes: fill(l.MaxBoardBytes, d.MaxBoardBytes),
	}
}

// Tighten returns l with every field of o that is set (non-zero) and
// smaller than l's applied: o can only make limits stricter. A zero field
// of l counts as unlimited here, so Tighten on Defaults fills defaults.
func (l Limits) Tighten(o Limits) Limits {
	minD := func(a, b time.Duration) time.Duration {
		if b > 0 && (a == 0 || b < a) {
			return b
		}
		return a
	}
	min64 := func(a, b int64) int64 {
		if b > 0 && (a == 0 || b < a) {
			return b
		}
		return a
	}
	minI := func(a, b int) int { return int(min64(int64(a), int64(b))) }
	return Limits{
		WallTime: minD(l.WallTime, o.WallTime), RunTime: minD(l.RunTime, o.RunTime),
		MemoryBytes: min64(l.MemoryBytes, o.MemoryBytes), StackDepth: minI(l.StackDepth, o.StackDepth),
		MaxValueBytes: min64(l.MaxValueBytes, o.MaxValueBytes), MaxEvents: minI(l.MaxEvents, o.MaxEvents),
		MaxEventBytes: min64(l.MaxEventBytes, o.MaxEventBytes), MaxLogBytes: min64(l.MaxLogBytes, o.MaxLogBytes),
		MaxBoardBytes: min64(l.MaxBoardBytes, o.MaxBoardBytes),
	}
}

type limitField struct {
	name string
	v    int64
}

func (l Limits) fields() []limitField {
	return []limitField{
		{"wall_time", int64(l.WallTime)}, {"run_time", int64(l.RunTime)}, {"memory_bytes", l.MemoryBytes},
		{"stack_depth", int64(l.StackDepth)}, {"max_value_bytes", l.MaxValueBytes}, {"max_events", int64(l.MaxEvents)},
		{"max_event_bytes", l.MaxEventBytes}, {"max_log_bytes", l.MaxLogBytes}, {"max_board_bytes", l.MaxBoardBytes},
	}
}
