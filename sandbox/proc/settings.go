package proc

import (
	"encoding/json"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

// Settings are the process-isolation settings of a runner resource (the
// `process:` key of a sandbox.Runtime/js resource in isolation: process).
// Zero fields take the defaults of Options.
type Settings struct {
	// MaxWorkers is how many workers of one tenant run calls at once.
	MaxWorkers int `json:"max_workers"`
	// Spares is how many ready workers each tenant keeps (-1: none).
	Spares int `json:"spares"`
	// IdleTimeout is how long an idle worker is kept ("5m").
	IdleTimeout string `json:"idle_timeout"`
	// MemoryPerWorker caps each worker's memory, in bytes, through the
	// kernel (RLIMIT_DATA).
	MemoryPerWorker int64 `json:"memory_per_worker"`
}

// Options converts the settings into the Options of a runtime whose
// workers serve worker with the runner settings given, under limits.
// A malformed duration or a negative number is a Validation error.
func (s Settings) Options(worker string, settings json.RawMessage, limits sandbox.Limits) (Options, error) {
	o := Options{Worker: worker, Settings: settings, Limits: limits, MaxWorkers: s.MaxWorkers,
		Spares: s.Spares, MemoryBytes: s.MemoryPerWorker}
	if s.IdleTimeout != "" {
		d, err := time.ParseDuration(s.IdleTimeout)
		if err != nil || d < 0 {
			return Options{}, fault.New(fault.Validation, "process", "idle_timeout: want a duration like \"5m\", got %q", s.IdleTimeout)
		}
		o.IdleTimeout = d
	}
	if s.MaxWorkers < 0 || s.MemoryPerWorker < 0 || s.Spares < -1 {
		return Options{}, fault.New(fault.Validation, "process", "max_workers and memory_per_worker must be >= 0, spares >= -1")
	}
	return o, nil
}
