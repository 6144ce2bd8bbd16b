package event

import (
	"math"
	"strconv"

	"github.com/corral-rt/corral/fault"
)

// Buffer and cache limits.
const (
	DefaultBufferSize     = 64      // a subscription's buffer when none is set
	MaxBufferSize         = 1 << 20 // the largest subscription buffer
	DefaultRouteCacheSize = 1024    // MemoryBus route cache entries
)

// String returns the policy's name: drop_newest, drop_oldest, block or
// sample.
func (b Backpressure) String() string {
	switch b {
	case DropNewest:
		return "drop_newest"
	case DropOldest:
		return "drop_oldest"
	case Block:
		return "block"
	case Sample:
		return "sample"
	}
	return "backpressure(" + strconv.Itoa(int(b)) + ")"
}

// Valid reports whether b is one of the four policies.
func (b Backpressure) Valid() bool { return b >= DropNewest && b <= Sample }

func clampRate(r float64) float64 {
	switch {
	case math.IsNaN(r) || r < 0:
		return 0
	case r > 1:
		return 1
	}
	return r
}

// ResolveSubConfig fills in the defaults of cfg (buffer defBuffer, or 64
// when defBuffer is outside 1..MaxBufferSize; a sample rate of 1) and
// validates it. Bus implementations call it from Subscribe. In the result
// SampleRate is the share kept, in [0,1], where 0 keeps none: resolve a
// SubConfig once.
func ResolveSubConfig(defBuffer int, cfg SubConfig) (SubConfig, error) {
	if defBuffer <= 0 || defBuffer > MaxBufferSize {
		defBuffer = DefaultBufferSize
	}
	c := cfg
	switch {
	case c.BufferSize == 0:
		c.BufferSize = defBuffer
	case c.BufferSize < 0 || c.BufferSize > MaxBufferSize:
		return SubConfig{}, fault.New(fault.Validation, "subscribe", "buffer size %d is outside 1..%d", c.BufferSize, MaxBufferSize)
	}
	if !c.Backpressure.Valid() {
		return SubConfig{}, fault.New(fault.Validation, "subscribe", "unknown backpressure policy %d", int(c.Backpressure))
	}
	if c.SampleRate == 0 {
		c.SampleRate = 1
	} else {
		c.SampleRate = clampRate(c.SampleRate)
	}
	return c, nil
}

// BusConfig configures NewMemoryBusWithConfig. The zero value is what
// NewMemoryBus uses.
type BusConfig struct {
	// RouteCacheSize caps the route cache at this many subjects. 0:
	// DefaultRouteCacheSize (1024); a negative size turns the cache off.
	RouteCacheSize int
	// DefaultBufferSize is the buffer of subscriptions that do not set
	// their own. 0, or a size outside 1..MaxBufferSize: DefaultBufferSize
	// (64).
	DefaultBufferSize int
}
