package local

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/corral-rt/corral/fault"
)

// The defaults of ServiceSettings.
const (
	DefaultMaxConcurrency       = 4
	DefaultMaxDepth             = 8
	DefaultIdempotencyRetention = 10 * time.Minute
	// MaxRecords bounds how many finished delegations a service remembers
	// for Get and for idempotent replay; the oldest are forgotten first.
	MaxRecords = 1024
)

// ServiceSettings are the settings of delegation.Service/local. Zero
// fields take the defaults; negative values are Validation errors.
type ServiceSettings struct {
	// MaxConcurrency caps the delegations running at once (default 4); one
	// more is refused with RateLimit rather than queued, so that nested
	// delegations can never wait on each other.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// MaxDepth caps how deep delegations nest (default 8): a top-level
	// run's delegation runs at depth 1.
	MaxDepth int `json:"max_depth,omitempty"`
	// Timeout bounds each delegated run; 0 means the caller's ctx alone.
	Timeout Duration `json:"timeout,omitempty"`
	// IdempotencyRetention is how long a finished delegation is
	// remembered for Get and idempotent replay (default 10m).
	IdempotencyRetention Duration `json:"idempotency_retention,omitempty"`
	// DeferWorkers caps the async delegations running at once (default
	// max_concurrency); they run on workers the service owns and also take
	// a max_concurrency slot.
	DeferWorkers int `json:"defer_workers,omitempty"`
}

// withDefaults validates s and fills its zero fields.
func (s ServiceSettings) withDefaults() (ServiceSettings, error) {
	switch {
	case s.MaxConcurrency < 0:
		return s, fault.New(fault.Validation, "delegation settings", "max_concurrency must be >= 0, got %d", s.MaxConcurrency)
	case s.MaxDepth < 0:
		return s, fault.New(fault.Validation, "delegation settings", "max_depth must be >= 0, got %d", s.MaxDepth)
	case s.Timeout < 0:
		return s, fault.New(fault.Validation, "delegation settings", "timeout must be >= 0, got %s", time.Duration(s.Timeout))
	case s.DeferWorkers < 0:
		return s, fault.New(fault.Validation, "delegation settings", "defer_workers must be >= 0, got %d", s.DeferWorkers)
	case s.IdempotencyRetention < 0:
		return s, fault.New(fault.Validation, "delegation settings", "idempotency_retention must be >= 0, got %s",
			time.Duration(s.IdempotencyRetention))
	}
	if s.MaxConcurrency == 0 {
		s.MaxConcurrency = DefaultMaxConcurrency
	}
	if s.MaxDepth == 0 {
		s.MaxDepth = DefaultMaxDepth
	}
	if s.DeferWorkers == 0 {
		s.DeferWorkers = s.MaxConcurrency
	}
	if s.IdempotencyRetention == 0 {
		s.IdempotencyRetention = Duration(DefaultIdempotencyRetention)
	}
	return s, nil
}

// Duration is a time.Duration written as a Go duration string ("30s") or
// a number of nanoseconds.
type Duration time.Duration

// UnmarshalJSON reads "1.5s" or 1500000000.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fault.New(fault.Validation, "decode duration", "%q is not a duration like \"5s\"", s)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fault.New(fault.Validation, "decode duration", "want a duration like \"5s\", got %s", bytes.TrimSpace(b))
	}
	*d = Duration(n)
	return nil
}

// MarshalJSON writes the Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
