package agent

import (
	"context"
	"time"

	"github.com/corral-rt/corral/runtime/event"
)

// StreamSink receives a turn's stream: every envelope of the run, each with
// its stream delta. Envelopes that are not stream deltas arrive with an
// empty delta (Type ""), as a liveness signal. An error detaches the sink.
type StreamSink interface {
	OnDelta(ctx context.Context, env event.Envelope, delta event.StreamDeltaPayload) error
}

// StreamSinkFunc adapts a function to a StreamSink.
type StreamSinkFunc func(ctx context.Context, env event.Envelope, delta event.StreamDeltaPayload) error

// OnDelta calls f.
func (f StreamSinkFunc) OnDelta(ctx context.Context, env event.Envelope, delta event.StreamDeltaPayload) error {
	return f(ctx, env, delta)
}

// CommitViewProvider may rewrite a result before committers see it (the
// session uses it to commit exactly the prefix a user acknowledged). An
// error fails the commit.
type CommitViewProvider interface {
	CommitView(ctx context.Context, run Run, res *Result) error
}

// ResumeContext describes a resumed run to the engine.
type ResumeContext struct {
	Attempt   int       // 2 for the first resume
	Signal    string    // "resume"
	StartedAt time.Time // when the original run started
}
