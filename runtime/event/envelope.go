package event

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"time"

	"github.com/corral-rt/corral/fault"
)

// The well-known headers.
const (
	HeaderRunID          = "run_id"
	HeaderNodeID         = "node_id"
	HeaderAgentID        = "agent_id"
	HeaderGraphID        = "graph_id"
	HeaderTenant         = "tenant"
	HeaderParentRunID    = "parent_run_id"           // set on envelopes of delegated turns
	HeaderToolCallID     = "tool_call_id"            // set on envelopes of tool-spawned turns
	HeaderDeliveryCursor = "session_delivery_cursor" // set by session confirmed delivery
)

// Envelope is one event: a subject, a JSON payload and routing metadata.
// ID is a 20-character id that sorts by creation time. Payload holds raw
// JSON bytes (nil when there is no payload). Headers and Payload of a
// delivered envelope are shared between every subscriber that receives it:
// treat them as read-only, and Clone before changing them.
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
// matches their subject. Implementations are safe for concurrent use and
// obey these rules (package eventtest checks them):
//
//   - Publish validates the subject (ErrInvalidSubject) and fills a missing
//     ID and Time. When it returns, the envelope has been queued for every
//     matching subscription or dropped under that subscription's
//     backpressure policy.
//   - Subscribe validates the pattern (ErrInvalidPattern) and the SubConfig
//     (fault.Validation).
//   - After Close, Publish and Subscribe return exactly ErrBusClosed.
//   - Close is idempotent and closes every subscription channel.
//   - A subscription closes when its ctx ends.
//   - Observer callbacks run outside the bus's locks.
type Bus interface {
	// Publish queues env for every matching subscription (or drops it under
	// that subscription's backpressure policy) before it returns. A missing
	// ID or Time is filled in. After Close it returns ErrBusClosed.
	Publish(ctx context.Context, env Envelope) error
	// Subscribe opens a subscription to pattern. It closes when ctx ends,
	// when Close is called on it, or when the bus closes. After Close it
	// returns ErrBusClosed.
	Subscribe(ctx context.Context, pattern string, cfg SubConfig) (Subscription, error)
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

// SubConfig configures one subscription (Bus.Subscribe). The zero value is
// the default: the bus's default buffer (64 unless the bus says
// otherwise), DropNewest, every envelope kept.
type SubConfig struct {
	// BufferSize is the subscription's buffer. 0: the bus's default; a
	// negative size or one above MaxBufferSize makes Subscribe fail with a
	// Validation error.
	BufferSize int
	// Backpressure is what happens when the buffer is full. The zero value
	// is DropNewest.
	Backpressure Backpressure
	// Predicate keeps only the envelopes for which it returns true. It runs
	// after pattern matching, on the publisher's goroutine, and must not
	// call into the bus. nil: every envelope.
	Predicate func(Envelope) bool
	// SampleRate is the share of envelopes a Sample subscription keeps,
	// clamped to [0,1]. 0: 1, every envelope; a negative rate or NaN keeps
	// none.
	SampleRate float64
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

// NewEnvelope returns an envelope for subject with a new ID, the current
// time, and the trace and span ids of ctx's span (see ContextWithSpan). The
// payload becomes the envelope's bytes: nil gives none, a json.RawMessage or
// a []byte is used as is, and anything else is JSON-encoded. An invalid
// subject is ErrInvalidSubject; a payload that does not encode is a
// Validation error.
func NewEnvelope(ctx context.Context, subject string, payload any) (Envelope, error) {
	if ctx == nil {
		return Envelope{}, fault.New(fault.Validation, "new envelope", "ctx must not be nil")
	}
	if err := ValidateSubject(subject); err != nil {
		return Envelope{}, err
	}
	raw, err := encodePayload(payload)
	if err != nil {
		return Envelope{}, fault.Wrap(fault.Validation, err, "new envelope", "encode payload of %q", subject)
	}
	now := time.Now()
	env := Envelope{ID: NewIDAt(now), Subject: subject, Time: now, Payload: raw}
	if sp, ok := SpanFromContext(ctx); ok {
		env.TraceID, env.SpanID = sp.TraceID, sp.SpanID
	}
	return env, nil
}

func encodePayload(payload any) (json.RawMessage, error) {
	switch p := payload.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	case []byte:
		return json.RawMessage(p), nil
	}
	return json.Marshal(payload)
}

// Decode unmarshals the payload into out. An empty payload leaves out
// untouched and returns nil. A payload that does not decode into out is a
// Validation error naming the subject.
func (e Envelope) Decode(out any) error {
	if len(bytes.TrimSpace(e.Payload)) == 0 {
		return nil
	}
	if err := json.Unmarshal(e.Payload, out); err != nil {
		return fault.Wrap(fault.Validation, err, "decode envelope", "payload of %q", e.Subject)
	}
	return nil
}

// Clone returns a copy of e whose Headers and Payload are its own.
func (e Envelope) Clone() Envelope {
	out := e
	out.Headers = maps.Clone(e.Headers)
	if e.Payload != nil {
		out.Payload = bytes.Clone(e.Payload)
	}
	return out
}

// Header returns the value of header k, or "" when it is not set.
func (e Envelope) Header(k string) string { return e.Headers[k] }

// WithHeader returns a copy of e with header k set to v. The copy's
// Headers map is new, so e and envelopes sharing its map are unchanged.
func (e Envelope) WithHeader(k, v string) Envelope {
	h := make(map[string]string, len(e.Headers)+1)
	maps.Copy(h, e.Headers)
	h[k] = v
	e.Headers = h
	return e
}

// Span identifies the trace and span an envelope was made in.
type Span struct {
	TraceID string
	SpanID  string
}

type spanKey struct{}

// ContextWithSpan returns a ctx carrying a span; NewEnvelope copies its ids
// into the envelopes it makes.
func ContextWithSpan(ctx context.Context, traceID, spanID string) context.Context {
	return context.WithValue(ctx, spanKey{}, Span{TraceID: traceID, SpanID: spanID})
}

// SpanFromContext returns the span of ctx and whether there is one.
func SpanFromContext(ctx context.Context) (Span, bool) {
	if ctx == nil {
		return Span{}, false
	}
	sp, ok := ctx.Value(spanKey{}).(Span)
	return sp, ok
}

// AckSubscription is an optional extension of Subscription for durable
// buses, whose consumers acknowledge each envelope by id. MemoryBus
// subscriptions do not implement it.
type AckSubscription interface {
	Subscription
	Ack(ctx context.Context, id string) error
}

// IDLen is the length of the ids NewID returns.
const IDLen = 20

// idAlphabet is base32hex in lower case: its order is the byte order, so
// ids sort like the bytes they encode.
const idAlphabet = "0123456789abcdefghijklmnopqrstuv"

// NewID returns a new 20-character envelope id. The id encodes 12 bytes:
// the creation time in nanoseconds since the Unix epoch (8 bytes, big
// endian) followed by 4 random bytes, in lower-case base32hex. Ids
// therefore sort by creation time, and two ids made in the same
// nanosecond differ unless their 32 random bits collide. The random bytes
// come from math/rand/v2's generator (ChaCha8, seeded by the runtime from
// the system's entropy): an id must be unique, not secret, and this keeps
// NewID off the system call crypto/rand makes, on the path of every event.
// NewID keeps no state between calls.
func NewID() string { return NewIDAt(time.Now()) }

// NewIDAt is NewID for an envelope made at t: a caller that stamps the
// envelope's Time with t reads the clock once for both.
func NewIDAt(t time.Time) string {
	return encodeID(uint64(t.UnixNano()), rand.Uint32())
}

// encodeID writes the 96 bits hi·lo as 20 base32hex characters, most
// significant first; the last character holds the final bit followed by
// four zeros.
func encodeID(hi uint64, lo uint32) string {
	var out [IDLen]byte
	putID(&out, hi, lo)
	return string(out[:])
}

// putID is encodeID writing into out.
func putID(out *[IDLen]byte, hi uint64, lo uint32) {
	for i := range 12 { // hi's first 60 bits
		out[i] = idAlphabet[hi>>(59-5*i)&31]
	}
	out[12] = idAlphabet[(hi&15)<<1|uint64(lo>>31)]
	for i := range 6 { // lo's bits 30 to 1
		out[13+i] = idAlphabet[lo>>(26-5*i)&31]
	}
	out[19] = idAlphabet[(lo&1)<<4]
}
