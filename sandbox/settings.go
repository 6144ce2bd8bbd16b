package sandbox

import (
	"time"

	"github.com/corral-rt/corral/fault"
)

// LimitSettings are Limits as a runtime resource's document writes them
// (settings.limits of sandbox.Runtime/js and /wasm): times are Go
// durations ("5s", "250ms"), sizes are bytes.
type LimitSettings struct {
	WallTime      string `json:"wall_time"`
	RunTime       string `json:"run_time"`
	MemoryBytes   int64  `json:"memory_bytes"`
	StackDepth    int    `json:"stack_depth"`
	MaxValueBytes int64  `json:"max_value_bytes"`
	MaxEvents     int    `json:"max_events"`
	MaxEventBytes int64  `json:"max_event_bytes"`
	MaxLogBytes   int64  `json:"max_log_bytes"`
	MaxBoardBytes int64  `json:"max_board_bytes"`
}

// Limits converts the settings; a malformed or negative duration, or a
// negative size, is a Validation error.
func (s LimitSettings) Limits() (Limits, error) {
	dur := func(name, v string) (time.Duration, error) {
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fault.Wrap(fault.Validation, err, "limits", "%s: want a duration like \"5s\"", name)
		}
		return d, nil
	}
	wall, err := dur("wall_time", s.WallTime)
	if err != nil {
		return Limits{}, err
	}
	run, err := dur("run_time", s.RunTime)
	if err != nil {
		return Limits{}, err
	}
	l := Limits{
		WallTime: wall, RunTime: run, MemoryBytes: s.MemoryBytes, StackDepth: s.StackDepth,
		MaxValueBytes: s.MaxValueBytes, MaxEvents: s.MaxEvents, MaxEventBytes: s.MaxEventBytes, MaxLogBytes: s.MaxLogBytes,
		MaxBoardBytes: s.MaxBoardBytes,
	}
	return l, l.Validate()
}
