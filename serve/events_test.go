package serve

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

func textDelta(run, text string) (event.Envelope, event.StreamDeltaPayload) {
	p := message.TextPart(text)
	d := event.StreamDeltaPayload{Type: event.DeltaPart, Part: &p}
	data, _ := json.Marshal(d)
	env := event.Envelope{Subject: event.SubjectStreamDelta(run, "n"), Headers: map[string]string{event.HeaderRunID: run}, Payload: data}
	return env, d
}

// REF 11.3.3
// The log keeps events up to its bound, then one overflow event and,
// always, the end; a reader from any point reads the rest once, and the
// end closes every reader.
func TestEventLogBoundAndReaders(t *testing.T) {
	t.Parallel()
	l := newEventLog(200)
	for _, s := range []string{"one", "two", "three", "a long text that passes the bound of two hundred bytes of the log, with the three before it"} {
		l.add(textDelta("r", s))
	}
	l.add(textDelta("r", "dropped"))
	l.end(agent.StatusCompleted, "")
	l.end(agent.StatusFailed, "a second end is ignored")

	read := func(after int) []string {
		var got []string
		require.NoError(t, l.follow(context.Background(), after, func(id int, ev streamEvent) error {
			got = append(got, ev.typ)
			return nil
		}))
		return got
	}
	assert.Equal(t, []string{evDelta, evDelta, evDelta, evOverflow, evEnd}, read(0))
	assert.Equal(t, []string{evOverflow, evEnd}, read(3))
	assert.Equal(t, []string(nil), read(5), "after the end there is nothing")
	assert.Equal(t, []string(nil), read(99), "an id past the end reads nothing")
	evs, closed, _ := l.from(4)
	assert.True(t, closed)
	assert.JSONEq(t, `{"status":"completed"}`, string(evs[0].data))
}

// A reader waiting for the next event ends with its ctx.
func TestEventLogFollowCtx(t *testing.T) {
	t.Parallel()
	l := newEventLog(1 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	l.add(textDelta("r", "x"))
	err := l.follow(ctx, 0, func(int, streamEvent) error { cancel(); return nil })
	assert.ErrorIs(t, err, context.Canceled)
}

// isRunSubject recognises the standard subjects of a run, ids that are
// sanitised included, and no other run's or other kind's.
func TestIsRunSubject(t *testing.T) {
	t.Parallel()
	for _, run := range []string{"run-1", "a.b*c>d", "", "run-é"} {
		for rest, subject := range map[string]string{
			subjectEnd:             event.SubjectRunEnd(run),
			subjectPromptRequested: event.SubjectPromptRequested(run),
			subjectPromptResolved:  event.SubjectPromptResolved(run),
		} {
			assert.True(t, isRunSubject(subject, run, rest), "%q of run %q", subject, run)
			assert.False(t, isRunSubject(subject, run+"x", rest), "%q is not of run %qx", subject, run)
			assert.False(t, isRunSubject(event.SubjectRunStart(run), run, rest), "a start is not %q", rest)
			assert.False(t, isRunSubject(event.SubjectStreamDelta(run, "n"), run, rest), "a delta is not %q", rest)
		}
	}
}

// A completion's log (textOnly) keeps the text deltas and the end, all
// its stream sends, and drops the run's other events.
func TestEventLogTextOnly(t *testing.T) {
	t.Parallel()
	l := newEventLog(1 << 20)
	l.textOnly = true
	start := event.Envelope{Subject: event.SubjectRunStart("r"), Headers: map[string]string{event.HeaderRunID: "r"}, Payload: []byte(`{}`)}
	l.add(start, event.StreamDeltaPayload{})
	l.add(textDelta("r", "kept"))
	env, d := textDelta("r", "")
	l.add(env, d)
	end := event.Envelope{Subject: event.SubjectRunEnd("r"), Headers: map[string]string{event.HeaderRunID: "r"}, Payload: []byte(`{"status":"completed"}`)}
	l.add(end, event.StreamDeltaPayload{})
	var got []string
	require.NoError(t, l.follow(context.Background(), 0, func(_ int, ev streamEvent) error {
		got = append(got, ev.typ)
		return nil
	}))
	assert.Equal(t, []string{evDelta, evEnd}, got)
}
