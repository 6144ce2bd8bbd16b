package agent

import (
	"context"
	"time"
)

// Clock is the host capability behind a script's clock (Date, host.now()).
// The runtime's base host reads the wall clock in UTC; a replaying host
// answers from a journal.
type Clock interface {
	Now() time.Time
}

// RandomSource is the host capability behind a script's randomness
// (Math.random, host.random()). The runtime's base host seeds it from the
// run id, so a run's sequence is reproducible.
type RandomSource interface {
	// Random returns a number in [0, 1).
	Random() float64
}

// LogSink is the host capability behind host.log(). Level is one of
// "debug", "info", "warn", "error".
type LogSink interface {
	Log(ctx context.Context, level, msg string, attrs map[string]any)
}
