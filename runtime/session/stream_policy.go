package session

import (
	"context"
	"slices"
)

// StreamPolicy is the stream sinks of a turn as its context carries them,
// so that the runs it delegates to can stream to the same sinks. A turn
// stamps its sinks with Inheritable set; a boundary that must not leak the
// stream stamps a policy with Inheritable false.
type StreamPolicy struct {
	Sinks       []SinkSpec
	Inheritable bool
}

type streamPolicyKey struct{}

// ContextWithStreamPolicy returns a ctx carrying a copy of p.
func ContextWithStreamPolicy(ctx context.Context, p StreamPolicy) context.Context {
	p.Sinks = slices.Clone(p.Sinks)
	return context.WithValue(ctx, streamPolicyKey{}, p)
}

// StreamPolicyFromContext returns the policy ctx carries and whether it
// carries one. The Sinks slice is the caller's.
func StreamPolicyFromContext(ctx context.Context) (StreamPolicy, bool) {
	if ctx == nil {
		return StreamPolicy{}, false
	}
	p, ok := ctx.Value(streamPolicyKey{}).(StreamPolicy)
	if ok {
		p.Sinks = slices.Clone(p.Sinks)
	}
	return p, ok
}

// Inherited returns the sinks a delegated run attaches: nil unless the
// policy is inheritable, otherwise a copy of every sink downgraded to an
// observer (no authority, acknowledgement on delivery, no unacknowledged
// window). Visibility, queue size, delivery timeout and OnDetach are kept.
// The same sink may then be called from several runs at once, so it must
// be safe for concurrent OnDelta calls.
func (p StreamPolicy) Inherited() []SinkSpec {
	if !p.Inheritable || len(p.Sinks) == 0 {
		return nil
	}
	out := slices.Clone(p.Sinks)
	for i := range out {
		out[i].Authority = AuthorityObserver
		out[i].AckMode = AckOnDelivery
		out[i].MaxUnacked = 0
	}
	return out
}
