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

// WithBufferSize sets the subscription's buffer. Zero keeps the default
// (64); a negative size or one above MaxBufferSize makes Subscribe fail
// with a Validation error.
func WithBufferSize(n int) SubOption {
	return func(c *SubConfig) { c.BufferSize = n }
}

// WithBackpressure sets what happens when the subscription's buffer is
// full. The default is DropNewest.
func WithBackpressure(p Backpressure) SubOption {
	return func(c *SubConfig) { c.Backpressure = p }
}

// WithPredicate keeps only the envelopes for which keep returns true. It
// runs after pattern matching, on the publisher's goroutine, and must not
// call into the bus.
func WithPredicate(keep func(Envelope) bool) SubOption {
	return func(c *SubConfig) { c.Predicate = keep }
}

// WithSampleRate sets the share of envelopes a Sample subscription keeps,
// clamped to [0,1] (NaN counts as 0). The default is 1.
func WithSampleRate(rate float64) SubOption {
	return func(c *SubConfig) { c.SampleRate = clampRate(rate) }
}

func clampRate(r float64) float64 {
	switch {
	case math.IsNaN(r) || r < 0:
		return 0
	case r > 1:
		return 1
	}
	return r
}

// ResolveSubConfig applies opts over the defaults (buffer defBuffer, or 64
// when defBuffer is not positive; DropNewest; no predicate; rate 1) and
// validates the result. Bus implementations call it from Subscribe.
func ResolveSubConfig(defBuffer int, opts ...SubOption) (SubConfig, error) {
	if defBuffer <= 0 || defBuffer > MaxBufferSize {
		defBuffer = DefaultBufferSize
	}
	c := SubConfig{BufferSize: defBuffer, Backpressure: DropNewest, SampleRate: 1}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	switch {
	case c.BufferSize == 0:
		c.BufferSize = defBuffer
	case c.BufferSize < 0 || c.BufferSize > MaxBufferSize:
		return SubConfig{}, fault.New(fault.Validation, "subscribe", "buffer size %d is outside 1..%d", c.BufferSize, MaxBufferSize)
	}
	if !c.Backpressure.Valid() {
		return SubConfig{}, fault.New(fault.Validation, "subscribe", "unknown backpressure policy %d", int(c.Backpressure))
	}
	c.SampleRate = clampRate(c.SampleRate)
	return c, nil
}

// BusOption configures a MemoryBus.
type BusOption func(*busConfig)

type busConfig struct {
	routeCacheSize int
	bufferSize     int
}

// WithRouteCacheSize caps the MemoryBus route cache at n subjects; 0 turns
// the cache off. A negative n counts as 0. The default is 1024.
func WithRouteCacheSize(n int) BusOption {
	return func(c *busConfig) { c.routeCacheSize = max(n, 0) }
}

// WithDefaultBufferSize sets the buffer of subscriptions that do not set
// their own. A size outside 1..MaxBufferSize keeps the default, 64.
func WithDefaultBufferSize(n int) BusOption {
	return func(c *busConfig) { c.bufferSize = n }
}
