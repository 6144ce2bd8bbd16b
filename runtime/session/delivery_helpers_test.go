package session

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/require"
)

const testRun = "run-0123456789abcdef"

// waitFor is the generous deadline of every wait in these tests.
const waitFor = 10 * time.Second

// delivery is one OnDelta call a recSink saw.
type delivery struct {
	env   event.Envelope
	delta event.StreamDeltaPayload
}

// recSink records what it is given. fn, when set, runs first; an error
// from it is returned and the delivery is not recorded.
type recSink struct {
	fn func(ctx context.Context, env event.Envelope, delta event.StreamDeltaPayload) error

	mu          sync.Mutex
	got         []delivery
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
}

func (r *recSink) OnDelta(ctx context.Context, env event.Envelope, delta event.StreamDeltaPayload) error {
	n := r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	for {
		m := r.maxInFlight.Load()
		if n <= m || r.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if r.fn != nil {
		if err := r.fn(ctx, env, delta); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.got = append(r.got, delivery{env, delta})
	r.mu.Unlock()
	return nil
}

func (r *recSink) all() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// waitN waits until the sink has recorded at least n deliveries.
func (r *recSink) waitN(t *testing.T, n int) []delivery {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.all()) >= n }, waitFor, time.Millisecond,
		"sink got %d deliveries, want %d", len(r.all()), n)
	return r.all()
}

// labels names each delivery: the text of a text part, "accept:f/b",
// "cancel:f/b", "end" for a run-end, or the last segment of the subject.
func labels(ds []delivery) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, label(d))
	}
	return out
}

func label(d delivery) string {
	switch {
	case d.delta.Type == event.DeltaPart && d.delta.Part != nil:
		return d.delta.Part.Text
	case d.delta.Type.IsControl():
		kind := strings.TrimPrefix(string(d.delta.Type), "parallel_branch_")
		return kind + ":" + d.delta.ForkID + "/" + d.delta.BranchID
	case d.delta.Type != "":
		return string(d.delta.Type)
	}
	if strings.HasSuffix(d.env.Subject, ".end") {
		return "end"
	}
	return d.env.Subject[strings.LastIndexByte(d.env.Subject, '.')+1:]
}

func cursors(t *testing.T, ds []delivery) []uint64 {
	t.Helper()
	out := make([]uint64, 0, len(ds))
	for _, d := range ds {
		c, err := DeliveryCursorFromEnvelope(d.env)
		require.NoError(t, err)
		out = append(out, c)
	}
	return out
}

// detachLog records OnDetach calls.
type detachLog struct {
	mu   sync.Mutex
	errs map[string][]error
}

func (l *detachLog) fn(id string) func(error) {
	return func(err error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.errs == nil {
			l.errs = map[string][]error{}
		}
		l.errs[id] = append(l.errs[id], err)
	}
}

// wait waits for the first OnDetach call of sink id and returns its error.
func (l *detachLog) wait(t *testing.T, id string) error {
	t.Helper()
	var err error
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.errs[id]) == 0 {
			return false
		}
		err = l.errs[id][0]
		return true
	}, waitFor, time.Millisecond, "OnDetach of %q was not called", id)
	return err
}

func (l *detachLog) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errs[id])
}

// harness runs one stream on a MemoryBus.
type harness struct {
	t       *testing.T
	bus     *event.MemoryBus
	s       *stream
	changes atomic.Int64
	run     string
}

func newHarness(t *testing.T, cfg streamConfig, specs ...SinkSpec) *harness {
	t.Helper()
	h := &harness{t: t, bus: event.NewMemoryBus()}
	if cfg.runID == "" {
		cfg.runID = testRun
	}
	h.run = cfg.runID
	if cfg.onChange == nil {
		cfg.onChange = func() { h.changes.Add(1) }
	}
	s, err := startStream(t.Context(), h.bus, cfg, specs)
	require.NoError(t, err)
	h.s = s
	t.Cleanup(func() {
		s.close()
		_ = h.bus.Close()
	})
	return h
}

func (h *harness) publish(subject string, payload any) {
	h.t.Helper()
	env, err := event.NewEnvelope(context.Background(), subject, payload)
	require.NoError(h.t, err)
	env.Headers = map[string]string{event.HeaderRunID: h.run}
	require.NoError(h.t, h.bus.Publish(context.Background(), env))
}

func (h *harness) delta(d event.StreamDeltaPayload) {
	h.t.Helper()
	h.publish(event.SubjectStreamDelta(h.run, event.Actor("bot", "n1")), d)
}

func textDelta(text string) event.StreamDeltaPayload {
	p := message.TextPart(text)
	return event.StreamDeltaPayload{Type: event.DeltaPart, Part: &p}
}

func specDelta(fork, branch, text string) event.StreamDeltaPayload {
	d := textDelta(text)
	d.Speculative, d.ForkID, d.BranchID = true, fork, branch
	return d
}

func control(t event.DeltaType, fork, branch string) event.StreamDeltaPayload {
	return event.StreamDeltaPayload{Type: t, ForkID: fork, BranchID: branch}
}

func (h *harness) text(text string)            { h.t.Helper(); h.delta(textDelta(text)) }
func (h *harness) spec(fork, branch, t string) { h.t.Helper(); h.delta(specDelta(fork, branch, t)) }
func (h *harness) accept(fork, branch string) {
	h.t.Helper()
	h.delta(control(event.DeltaParallelBranchAccept, fork, branch))
}
func (h *harness) cancel(fork, branch string) {
	h.t.Helper()
	h.delta(control(event.DeltaParallelBranchCancel, fork, branch))
}
func (h *harness) step(node string) {
	h.t.Helper()
	h.publish(event.SubjectStepStart(h.run, event.Actor("bot", node)), event.StepPayload{NodeID: node, Graph: "g"})
}
func (h *harness) runEnd() {
	h.t.Helper()
	h.publish(event.SubjectRunEnd(h.run), event.RunPayload{Graph: "g"})
}

// waitRunEnds waits until the stream has routed n engine run-ends.
func (h *harness) waitRunEnds(n int) {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return h.s.runEnds >= n
	}, waitFor, time.Millisecond)
}

// finalize runs finalize with a background ctx and waits for it.
func (h *harness) finalize(attempts int) error {
	h.t.Helper()
	return h.s.finalize(context.Background(), attempts, "completed", nil)
}

func decodeRunEnd(t *testing.T, d delivery) RunEndPayload {
	t.Helper()
	var p RunEndPayload
	require.NoError(t, json.Unmarshal(d.env.Payload, &p))
	return p
}

// checkGoroutines records the goroutine count and, at cleanup, waits
// until it is back to it. Tests that use it must not run in parallel.
func checkGoroutines(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(waitFor)
		for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > base {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines left behind (baseline %d):\n%s", n-base, base, buf[:runtime.Stack(buf, true)])
		}
	})
}
