package event

import (
	"context"
	"encoding/json"
	"time"
)

// Envelope is one event: a subject, a JSON payload and routing metadata.
// Headers and Payload of a delivered envelope are shared between every
// subscriber that receives it: treat them as read-only.
type Envelope struct {
	ID      string            `json:"id"`
	Subject string            `json:"subject"`
	Time    time.Time         `json:"time"`
	Source  string            `json:"source,omitempty"`
	TraceID string            `json:"trace_id,omitempty"`
	SpanID  string            `json:"span_id,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Payload json.RawMessage   `json:"payload,omitempty"`
}

// Bus routes envelopes from publishers to the subscriptions whose pattern
// matches their subject.
type Bus interface {
	// Publish queues env for every matching subscription (or drops it under
	// that subscription's backpressure policy) before it returns. A missing
	// ID or Time is filled in. After Close it returns ErrBusClosed.
	Publish(ctx context.Context, env Envelope) error
	// Subscribe opens a subscription to pattern. It closes when ctx ends,
	// when Close is called on it, or when the bus closes. After Close it
	// returns ErrBusClosed.
	Subscribe(ctx context.Context, pattern string, opts ...SubOption) (Subscription, error)
	// AttachObserver adds an observer of publishes, deliveries and drops and
	// returns a function that removes it.
	AttachObserver(o Observer) (detach func())
	// Close closes every subscription. It is idempotent.
	Close() error
}

// Subscription is an open subscription.
type Subscription interface {
	// C delivers the matching envelopes; it is closed when the
	// subscription ends.
	C() <-chan Envelope
	// Pattern returns the pattern the subscription was opened with.
	Pattern() string
	// Close ends the subscription. It is idempotent.
	Close() error
}

// Observer sees what a bus does. Callbacks run outside the bus's locks and
// must not call back into the bus.
type Observer interface {
	OnPublish(env Envelope)
	OnDeliver(pattern string, env Envelope)
	OnDrop(pattern string, env Envelope, reason DropReason)
}

// DropReason says why an envelope did not reach a subscription.
type DropReason string

// The drop reasons.
const (
	DropBufferFull DropReason = "buffer_full"
	DropClosed     DropReason = "closed"
	DropSampled    DropReason = "sampled"
)

// SubOption configures one subscription.
type SubOption func(*SubConfig)

// SubConfig is the resolved configuration of a subscription.
type SubConfig struct {
	BufferSize   int                 // default 64, at most 1<<20
	Backpressure Backpressure        // default DropNewest
	Predicate    func(Envelope) bool // applied after pattern matching; nil keeps all
	SampleRate   float64             // for Sample; clamped to [0,1]
}

// Backpressure is what a subscription does when its buffer is full.
type Backpressure int

// The policies.
const (
	DropNewest Backpressure = iota // discard the incoming envelope (the default)
	DropOldest                     // evict the oldest buffered envelope
	Block                          // the publisher waits for room or for its ctx
	Sample                         // keep at random by SampleRate, then enqueue without blocking
)
