package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// Session is the conversation of one agent in one context. It runs one turn
// at a time; a new Start interrupts the active turn first. Sessions are
// shared by every lease of their key.
type Session struct {
	m   *Manager
	key Key
	tun Tunables // captured when the session was created

	startMu sync.Mutex // serializes Start and Resume

	mu           sync.Mutex
	turn         *Turn // the latest turn
	starting     bool  // a Start or Resume is between its checks and its turn
	closing      bool
	ephemeralSet bool
	ephemeral    bool
	catalogs     map[*epoch]any

	closingNotified atomic.Bool
	closedNotified  atomic.Bool
}

func newSession(m *Manager, key Key, tun Tunables) *Session {
	return &Session{m: m, key: key, tun: tun, catalogs: map[*epoch]any{}}
}

// Key returns the session's key.
func (s *Session) Key() Key { return s.key }

// Ephemeral reports whether the session was fixed as ephemeral by its
// first turn.
func (s *Session) Ephemeral() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ephemeral
}

// Turn returns the latest turn, or nil before the first Start.
func (s *Session) Turn() *Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn
}

// busy reports whether a turn is being started or the latest turn has not
// settled. A closing session whose turn has stopped is not busy.
func (s *Session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busyLocked()
}

func (s *Session) busyLocked() bool {
	return s.starting || (s.turn != nil && !s.turn.settled())
}

// idle is REF 2.1.6: not closing and no active turn (prompts and
// sinks live inside a turn, which settles only once they are gone).
func (s *Session) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closing && !s.busyLocked()
}

func (s *Session) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// closeIfIdle marks the session closing when it is idle, in one step, so
// that no turn can start between the check and the mark.
func (s *Session) closeIfIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busyLocked() {
		return false
	}
	s.closing = true
	return true
}

func (s *Session) markClosing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
}

// close interrupts the active turn with host_shutdown and waits up to
// timeout. A turn still running then is cancelled and waited for once more,
// up to timeout, so that an engine that honours its ctx has settled when
// close returns; errNotStopped is returned either way.
func (s *Session) close(timeout time.Duration) error {
	s.markClosing()
	t := s.Turn()
	if t == nil {
		return nil
	}
	_ = t.Interrupt(agent.Interrupt{Cause: agent.CauseHostShutdown})
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-t.Done():
		return nil
	case <-timer.C:
	}
	t.Cancel()
	timer.Reset(timeout)
	select {
	case <-t.Done():
	case <-timer.C:
	}
	return fault.Wrap(fault.Timeout, errNotStopped, "close session", "%s: run %s", s.key, t.RunID())
}

// StartConfig configures one StartWithConfig or ResumeWithConfig. The zero
// value is what Start uses with no sinks.
type StartConfig struct {
	// Sinks are the stream sinks attached to the turn (see SinkSpec). nil:
	// none.
	Sinks []SinkSpec
	// AskUser, when set, answers the engine's AskUser directly: no prompt
	// events are published and nothing waits for Turn.Reply. nil: prompts
	// are published and wait for Reply.
	AskUser func(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error)
	// Ephemeral makes the session ephemeral: it never loads history, never
	// writes session state or run checkpoints, and its turns are never
	// parked. The first Start fixes the choice for the session's life;
	// Resume refuses it. false: the session keeps durable state when the
	// manager's epoch has resume on.
	Ephemeral bool
	// RunID, when set, is the turn's run id instead of a new one: a replay
	// of a recorded turn reproduces the recorded run id, from which the
	// run's random sequence is seeded. It must be non-blank with no
	// surrounding whitespace. "": a new run id (REF 2.2.7).
	RunID string
	// History, when set, is the board the turn starts from in place of
	// the session's stored history: the conversation a stateless chat
	// request carries (its messages on the main channel of an ephemeral
	// turn), or, in a replay of a turn that began with history, the
	// recorded board. Every message on it must be valid; a turn that
	// resumes a run does not use it. nil: the session's stored history
	// (none for an ephemeral turn).
	History *agent.Board
	// ResumeFrom, when set, resumes this checkpoint of the run
	// ResumeFrom.ExecID (which becomes the turn's run id) instead of
	// starting afresh: a replay of a resumed turn resumes the recorded
	// checkpoint without a checkpoint store. nil: a new run.
	ResumeFrom *agent.Checkpoint
	// Steer are queued for the turn before its run starts, in order, as
	// Turn.Steer queues them (at most MaxSteerQueue valid messages): a
	// replay reproduces the steer messages a recorded turn left undrained.
	// nil: none.
	Steer []message.Message
}

// Start runs req as a new turn with the given sinks (REF 2.2).
func (s *Session) Start(ctx context.Context, req agent.Request, sinks ...SinkSpec) (*Turn, error) {
	return s.StartWithConfig(ctx, req, StartConfig{Sinks: sinks})
}

// StartWithConfig runs req as a new turn configured by cfg. Any active
// turn is interrupted with cause user_input and waited for (bounded by ctx)
// first. A request without a message (the zero message) is allowed, as
// agent.Execute allows it; an invalid message or sink is refused before
// anything is interrupted.
func (s *Session) StartWithConfig(ctx context.Context, req agent.Request, cfg StartConfig) (*Turn, error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "start turn", "ctx must not be nil")
	}
	cfg, err := cfg.owned()
	if err != nil {
		return nil, err
	}
	if err := validateRequest(req); err != nil {
		return nil, err // refused before any active turn is interrupted
	}
	s.startMu.Lock()
	defer s.startMu.Unlock()
	return s.start(ctx, req, cfg)
}

// owned returns cfg with its own copy of the sinks and the history, once
// they are valid.
func (cfg StartConfig) owned() (StartConfig, error) {
	cfg.Sinks = slices.Clone(cfg.Sinks)
	if cfg.History != nil {
		for name, msgs := range cfg.History.Channels {
			for i, m := range msgs {
				if err := m.Validate(); err != nil {
					return cfg, fault.Wrap(fault.Validation, err, "start turn", "history channel %q message %d", name, i)
				}
			}
		}
		cfg.History = cfg.History.Clone()
	}
	if cfg.ResumeFrom != nil {
		cp := cfg.ResumeFrom.Clone()
		cfg.ResumeFrom = &cp
	}
	if len(cfg.Steer) > MaxSteerQueue {
		return cfg, ErrSteerQueueFull
	}
	for _, m := range cfg.Steer {
		if err := m.Validate(); err != nil {
			return cfg, err
		}
	}
	cfg.Steer = message.CloneAll(cfg.Steer)
	if cfg.RunID != "" && (strings.TrimSpace(cfg.RunID) != cfg.RunID || len(cfg.RunID) > 256) {
		return cfg, fault.New(fault.Validation, "start turn", "run id %q must have no surrounding whitespace and at most 256 bytes", cfg.RunID)
	}
	return cfg, ValidateSinks(cfg.Sinks)
}

// beginStart checks that the session takes a turn and that the turn keeps
// the session's ephemeral choice (REF 2.2.3: the first turn fixes
// it), and marks a start in flight so that the session counts as busy
// until endStart.
func (s *Session) beginStart(ephemeral bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrSessionClosing
	}
	if s.ephemeralSet && s.ephemeral != ephemeral {
		return fault.New(fault.Validation, "start turn", "session %s is ephemeral=%t; a turn cannot change it", s.key, s.ephemeral)
	}
	s.starting = true
	return nil
}

// endStart clears the in-flight mark and lets the manager re-evaluate the
// idle timer.
func (s *Session) endStart() {
	s.mu.Lock()
	s.starting = false
	s.mu.Unlock()
	s.m.sessionChanged(s)
}

// publishTurn makes t the session's turn unless the session started
// closing meanwhile: a close that ran while the turn was being built saw no
// active turn, so the turn must not run.
func (s *Session) publishTurn(t *Turn, ephemeral bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrSessionClosing
	}
	s.turn, s.ephemeralSet, s.ephemeral = t, true, ephemeral
	return nil
}

// resumeState carries a parked run into start.
type resumeState struct {
	runID string
	cp    *agent.Checkpoint
	claim Claim // acquired before the parked run was read
}

// start runs the start sequence of REF 2.2.2–2.2.13 under startMu.
func (s *Session) start(ctx context.Context, req agent.Request, cfg StartConfig) (*Turn, error) {
	if err := s.beginStart(cfg.Ephemeral); err != nil {
		return nil, err
	}
	defer s.endStart()
	return s.launch(ctx, req, cfg, nil)
}

// launch is the start sequence after beginStart, under startMu; rs carries
// the parked run of a Resume.
func (s *Session) launch(ctx context.Context, req agent.Request, cfg StartConfig, rs *resumeState) (t *Turn, err error) {
	ep, err := s.m.acquireEpoch()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.m.releaseEpoch(ep)
		}
	}()
	if err := s.stopActive(ctx); err != nil {
		return nil, err
	}
	c, err := s.launchClaim(ctx, ep, rs)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && c != nil {
			_ = c.Release(context.WithoutCancel(ctx))
		}
	}()
	ag, ok := ep.deps.Resolver.Agent(s.key.AgentID)
	if !ok {
		return nil, fault.New(fault.NotFound, "start turn", "agent %q is not deployed", s.key.AgentID)
	}
	runID := newRunID()
	if cfg.RunID != "" {
		runID = cfg.RunID
	}
	if rs == nil && cfg.ResumeFrom != nil {
		rs = &resumeState{runID: cfg.ResumeFrom.ExecID, cp: cfg.ResumeFrom}
	}
	if rs != nil {
		runID = rs.runID
	}
	if req, err = s.turnRequest(req, runID); err != nil {
		return nil, err
	}
	durable := durableOn(ep, cfg.Ephemeral)
	var history *agent.Board
	var parked string
	if durable && rs == nil {
		if history, parked, err = loadHistory(ctx, ep.deps.Checkpoints, s.key); err != nil {
			return nil, err
		}
	}
	if cfg.History != nil && rs == nil {
		history = cfg.History
	}
	if err := s.ensureCatalog(ctx, ep); err != nil {
		return nil, err
	}
	tenant := ag.Definition.TenantID()
	endQuota, err := s.m.tenants.beginTurn(tenant)
	if err != nil {
		return nil, fmt.Errorf("start turn: %w", err)
	}
	t = newTurn(s, ep, runID, cfg, req)
	t.claim, t.ctx, t.superseded = c, ContextWithClaim(t.ctx, c), parked
	c = nil // the turn releases it from here on
	t.history = history
	t.steer = cfg.Steer
	if rs != nil {
		t.resumeFrom = rs.cp
	}
	t.quota = &turnQuota{ts: s.m.tenants, tenant: tenant, q: s.m.tenants.quota(tenant)}
	t.endQuota = endQuota
	if err := t.prepare(ctx, cfg.Ephemeral); err != nil {
		t.abortStart()
		return nil, err
	}
	if err := s.publishTurn(t, cfg.Ephemeral); err != nil {
		t.abortStart()
		return nil, err
	}
	t.setState(TurnRunning)
	for _, o := range s.m.observers {
		o.OnSessionStarted(s, t)
	}
	go t.watchClaim()
	go t.run(ag, history, rs, durable)
	return t, nil
}

// turnRequest returns a copy of req for run runID: the run id and the
// session's context id overwrite the caller's (REF 2.2.7), and the
// message, unless it is the zero message, must be valid.
func (s *Session) turnRequest(req agent.Request, runID string) (agent.Request, error) {
	req = req.Clone()
	req.RunID, req.ContextID = runID, s.key.ContextID
	return req, validateRequest(req)
}

// validateRequest checks the request's message, unless it is the zero
// message.
func validateRequest(req agent.Request) error {
	if isZeroMessage(req.Message) {
		return nil
	}
	if err := req.Message.Validate(); err != nil {
		return fault.Wrap(fault.Validation, err, "start turn", "request message")
	}
	return nil
}

// isZeroMessage reports whether m is the zero message, which a request
// may carry to mean "no message" (agent.Execute accepts it).
func isZeroMessage(m message.Message) bool {
	return m.Role == "" && len(m.Parts) == 0 && m.Name == "" && len(m.Metadata) == 0
}

// stopActive interrupts the active turn with user_input and waits for it,
// bounded by ctx (REF 2.2.6).
func (s *Session) stopActive(ctx context.Context) error {
	prev := s.Turn()
	if prev == nil || prev.settled() {
		return nil
	}
	_ = prev.Interrupt(agent.Interrupt{Cause: agent.CauseUserInput})
	select {
	case <-prev.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ensureCatalog builds the per-session tool catalog the first time the
// session starts a turn in an epoch (REF 2.2.9).
func (s *Session) ensureCatalog(ctx context.Context, ep *epoch) error {
	if ep.deps.CatalogProvider == nil {
		return nil
	}
	s.mu.Lock()
	_, ok := s.catalogs[ep]
	s.mu.Unlock()
	if ok {
		return nil
	}
	c, err := ep.deps.CatalogProvider(ctx, s.key)
	if err != nil {
		return fault.Wrap(fault.KindOr(err, fault.Internal), err, "start turn", "tool catalog")
	}
	s.mu.Lock()
	clear(s.catalogs) // only the current epoch's catalog is kept
	s.catalogs[ep] = c
	s.mu.Unlock()
	return nil
}

func (s *Session) catalog(ep *epoch) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catalogs[ep]
}

func durableOn(ep *epoch, ephemeral bool) bool {
	return !ephemeral && ep.deps.Resume && ep.deps.Checkpoints != nil
}
