package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// TurnState is where a turn is in its life.
type TurnState string

// The turn states. The last five are terminal.
const (
	TurnStarting     TurnState = "starting"
	TurnRunning      TurnState = "running"
	TurnInterrupting TurnState = "interrupting"
	TurnCompleted    TurnState = "completed"
	TurnInterrupted  TurnState = "interrupted"
	TurnCanceled     TurnState = "canceled"
	TurnFailed       TurnState = "failed"
	TurnAborted      TurnState = "aborted"
)

// Terminal reports whether s is a final state.
func (s TurnState) Terminal() bool {
	switch s {
	case TurnCompleted, TurnInterrupted, TurnCanceled, TurnFailed, TurnAborted:
		return true
	}
	return false
}

// State keys the session writes on a turn's result.
const (
	StatePendingSteer  = "session.pending_steer"
	StateFinalizeError = "session.finalize_error"
)

// Turn is one run of the session's agent. Its methods are safe for
// concurrent use.
type Turn struct {
	s     *Session
	ep    *epoch
	runID string
	req   agent.Request
	cfg   StartConfig
	// history and resumeFrom are what the run starts from (HostRequest).
	history    *agent.Board
	resumeFrom *agent.Checkpoint

	ctx    context.Context
	cancel context.CancelFunc
	intrCh chan agent.Interrupt
	host   agent.Host
	stream *stream
	done   chan struct{}
	claim  Claim // the session key's claim for this turn (ownership.go)
	// superseded is the run parked before this fresh one started: it can
	// never be resumed once this one is marked in flight (persist drops it).
	superseded string
	// quota is what the turn spends of its tenant's quotas, and endQuota
	// releases its place among the tenant's running turns.
	quota    *turnQuota
	endQuota func()

	mu      sync.Mutex
	state   TurnState
	intr    *agent.Interrupt
	intrAt  time.Time // when intr was sent (InterruptSent)
	steer   []message.Message
	prompts map[string]*prompt
	res     *agent.Result
	err     error
}

func newTurn(s *Session, ep *epoch, runID string, cfg StartConfig, req agent.Request) *Turn {
	ctx, cancel := context.WithCancel(context.Background())
	return &Turn{
		s: s, ep: ep, runID: runID, req: req, cfg: cfg,
		ctx: ctx, cancel: cancel,
		intrCh:  make(chan agent.Interrupt, 1),
		done:    make(chan struct{}),
		state:   TurnStarting,
		prompts: map[string]*prompt{},
	}
}

// tenant is the tenant of the turn's agent, as its quotas count it.
func (t *Turn) tenant() string {
	if t.quota == nil {
		return ""
	}
	return t.quota.tenant
}

// prepare builds the host and attaches the stream (REF 2.2.10–2.2.12).
func (t *Turn) prepare(ctx context.Context, ephemeral bool) error {
	h, err := t.buildHost(ctx, ephemeral)
	if err != nil {
		return err
	}
	t.host = h
	if sp, ok := event.SpanFromContext(ctx); ok { // the run's events name the caller's span (REF 13.2.6)
		t.ctx = event.ContextWithSpan(t.ctx, sp.TraceID, sp.SpanID)
	}
	policy := StreamPolicy{Sinks: t.cfg.Sinks, Inheritable: true}
	t.ctx = ContextWithStreamPolicy(t.ctx, policy)
	st, err := startStream(t.ctx, t.ep.deps.Bus, t.streamConfig(), t.cfg.Sinks)
	if err != nil {
		return err
	}
	t.stream = st
	return nil
}

// abortStart releases what a failed start built.
func (t *Turn) abortStart() {
	t.cancel()
	t.releaseClaim()
	t.endQuota()
	if t.stream != nil {
		t.stream.close()
	}
}

func (t *Turn) streamConfig() streamConfig {
	tun := t.s.tun
	return streamConfig{
		runID:               t.runID,
		sinkBuffer:          tun.SinkBuffer,
		deliveryConcurrency: tun.DeliveryConcurrency,
		speculativeEvents:   tun.SpeculativeBufferEvents,
		speculativeBytes:    tun.SpeculativeBufferBytes,
		finalizeBudget:      t.s.m.finalize,
		logger:              t.s.m.logger,
		onChange:            func() { t.s.m.sessionChanged(t.s) },
	}
}

// RunID returns the turn's run id; it never changes (REF 2.2.18).
func (t *Turn) RunID() string { return t.runID }

// Session returns the turn's session.
func (t *Turn) Session() *Session { return t.s }

// State returns the turn's current state.
func (t *Turn) State() TurnState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

func (t *Turn) setState(st TurnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.state.Terminal() && t.state != TurnInterrupting {
		t.state = st
	}
}

// Done is closed when the turn has settled.
func (t *Turn) Done() <-chan struct{} { return t.done }

func (t *Turn) settled() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// Wait returns the turn's result once it settles; every call returns the
// same pair. A ctx that ends first returns its error and leaves the turn
// alone (REF 2.2.15).
func (t *Turn) Wait(ctx context.Context) (*agent.Result, error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "wait", "ctx must not be nil")
	}
	select {
	case <-t.done:
		return t.res, t.err
	default:
	}
	select {
	case <-t.done:
		return t.res, t.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Interrupt asks the turn to stop at its next safe point (REF
// 2.2.16). The first cause wins; later calls, and calls on a settled turn,
// return nil. Pending prompts resolve as interrupted and the acknowledged
// prefix is frozen.
func (t *Turn) Interrupt(intr agent.Interrupt) error {
	switch intr.Cause {
	case agent.CauseUserCancel, agent.CauseUserInput, agent.CauseHostShutdown, agent.CauseCustom:
	default:
		return fault.New(fault.Validation, "interrupt", "unknown cause %q", intr.Cause)
	}
	t.mu.Lock()
	if t.state.Terminal() || t.intr != nil {
		t.mu.Unlock()
		return nil
	}
	t.intr, t.intrAt = &intr, time.Now()
	t.state = TurnInterrupting
	pending := t.takePromptsLocked()
	t.mu.Unlock()
	if t.stream != nil {
		t.stream.freeze()
	}
	t.resolvePrompts(pending, promptInterrupted)
	select {
	case t.intrCh <- intr:
	default:
	}
	return nil
}

// interruptSent returns when the turn was interrupted, for the turn's
// host (HostRequest.InterruptSent).
func (t *Turn) interruptSent() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.intrAt, t.intr != nil
}

// Cancel cancels the turn's context at once; the run settles as canceled
// and is not committed. It is idempotent (REF 2.2.17).
func (t *Turn) Cancel() { t.cancel() }

// Ack acknowledges the confirmed stream up to cursor for the
// authoritative explicit-ack sink (REF 2.4.15).
func (t *Turn) Ack(sinkID string, cursor uint64) error { return t.stream.ack(sinkID, cursor) }

// run executes the agent and settles the turn.
func (t *Turn) run(ag *agent.Agent, history *agent.Board, rs *resumeState, durable bool) {
	cfg := agent.ExecuteConfig{Referees: []agent.Referee{t}, CommitView: t, History: history}
	if rs != nil {
		cfg.ResumeFrom = rs.cp
		cfg.ResumeContext = &agent.ResumeContext{Attempt: 2, Signal: "resume", StartedAt: rs.cp.OriginalStartedAt}
	}
	if durable && rs == nil {
		t.markInFlight(history)
	}
	res, err := agent.ExecuteWithConfig(t.ctx, ag, t.host, t.req, cfg)
	attempts, status, runErr := 0, agent.StatusFailed, err
	if res != nil {
		attempts, status, runErr = res.Attempts, res.Status, errors.Join(res.Err, err)
	}
	finErr := t.stream.finalize(context.Background(), attempts, status, runErr)
	t.settle(res, err, finErr, durable)
}

// settle records the outcome, closes prompts, persists session state,
// releases the epoch, tells the observers and then wakes Wait.
func (t *Turn) settle(res *agent.Result, err, finErr error, durable bool) {
	t.mu.Lock()
	if res != nil {
		if res.State == nil {
			res.State = map[string]any{}
		}
		if n := len(t.steer); n > 0 {
			res.State[StatePendingSteer] = n
		}
		if finErr != nil {
			res.State[StateFinalizeError] = finErr.Error()
		}
	}
	t.state = terminalState(res, err)
	t.res, t.err = res, err
	pending := t.takePromptsLocked()
	t.mu.Unlock()
	t.resolvePrompts(pending, promptClosed)
	if durable {
		t.persist(res)
	}
	if cerr := t.claim.Err(); cerr != nil {
		t.err = errors.Join(t.err, cerr) // the claim was lost: the turn was stopped for it
	}
	t.cancel()
	t.releaseClaim()
	t.endQuota()
	t.s.m.releaseEpoch(t.ep)
	// Observers hear of the end before Wait returns and before the session
	// counts as idle, so OnTurnFinished always precedes OnSessionClosing.
	for _, o := range t.s.m.observers {
		o.OnTurnFinished(t.s, t, res, err)
	}
	close(t.done)
	t.s.m.sessionChanged(t.s)
}

// terminalState follows REF 2.2.14.
func terminalState(res *agent.Result, err error) TurnState {
	if res != nil {
		switch res.Status {
		case agent.StatusCompleted:
			return TurnCompleted
		case agent.StatusInterrupted:
			return TurnInterrupted
		case agent.StatusCanceled:
			return TurnCanceled
		case agent.StatusAborted:
			return TurnAborted
		}
		return TurnFailed
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return TurnCanceled
	}
	return TurnFailed
}

// Judge makes the turn a referee (REF 2.4.14): an interrupted result
// whose acknowledged prefix is not empty is accepted.
func (t *Turn) Judge(_ context.Context, _ agent.Run, res *agent.Result) (agent.Verdict, error) {
	if res.Status != agent.StatusInterrupted {
		return agent.Verdict{}, nil
	}
	if prefix, ok := t.stream.acknowledgedPrefix(); ok && prefix != "" {
		return agent.Verdict{Accept: true, Reason: "acknowledged prefix"}, nil
	}
	return agent.Verdict{}, nil
}

// CommitView makes the turn a commit-view provider (REF 2.4.14): an
// interrupted run with an authoritative sink commits exactly the prefix that
// sink acknowledged. A completed run commits its whole output: its prefix
// may still lag behind the asynchronous delivery.
func (t *Turn) CommitView(_ context.Context, _ agent.Run, res *agent.Result) error {
	prefix, ok := t.stream.acknowledgedPrefix()
	if !ok || !res.Committed || res.Status != agent.StatusInterrupted {
		return nil
	}
	return commitPrefix(res, prefix)
}

// newRunID mints "run-" + 16 hex characters (REF 2.2.7).
func newRunID() string { return "run-" + randomHex(8) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Steer queues msg for the running turn; a document node delivers it when
// it calls host.drainSteer() (REF 2.3). Non-delivery is always
// reported, checked in this order: an invalid message (Validation), a JSON
// encoding over 32 KiB (ErrSteerTooLarge), a settled turn (ErrSteerClosed),
// a requested interrupt (an *agent.InterruptedError), a full queue of 8
// (ErrSteerQueueFull). The message is deep-copied.
func (t *Turn) Steer(msg message.Message) error {
	if err := msg.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return fault.Wrap(fault.Validation, err, "steer", "encode")
	}
	if len(b) > MaxSteerMessageBytes {
		return ErrSteerTooLarge
	}
	msg = msg.Clone()
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.state.Terminal():
		return ErrSteerClosed
	case t.intr != nil:
		return agent.Interrupted(*t.intr)
	case len(t.steer) >= MaxSteerQueue:
		return ErrSteerQueueFull
	}
	t.steer = append(t.steer, msg)
	return nil
}

// PendingSteer returns how many steer messages are queued.
func (t *Turn) PendingSteer() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.steer)
}

// DrainSteer takes every queued message, in arrival order, as deep copies;
// nil when none is queued. It never blocks, never returns a message twice,
// and still works after the turn has settled, so the owner can recover
// undelivered messages.
func (t *Turn) DrainSteer() []message.Message {
	t.mu.Lock()
	q := t.steer
	t.steer = nil
	t.mu.Unlock()
	if len(q) == 0 {
		return nil
	}
	return message.CloneAll(q)
}
