package serve

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// turnEntry is a turn started through the Server, with its event log and,
// once it settled, its result.
type turnEntry struct {
	tenant  string
	agentID string
	turn    *session.Turn
	log     *eventLog
	req     agent.Request // what the turn was started with
	started time.Time
	streams atomic.Int32 // event streams open on the turn
	kept    bool         // a native turn, kept by its session
	// unstreamed: nothing reads the turn's log (turnSpec.unstreamed).
	unstreamed bool
	done       chan struct{} // closed once res and err are set
	res        *agent.Result
	err        error
}

// turnSpec is what starting a turn needs besides the session.
type turnSpec struct {
	tenant  string
	req     agent.Request
	cfg     session.StartConfig
	onStart func(*turnEntry) // runs before the turn is watched; may be nil
	// unstreamed: nothing reads the turn's events (a non-streamed chat
	// completion), so no sink feeds its log; the log gets only the end.
	// The caller then watches the turn itself (s.watch, which returns once
	// it settled) instead of a goroutine of its own: the request waits for
	// the turn anyway, and the hand-over costs a wake-up less.
	unstreamed bool
	// textOnly: the turn's log keeps only what a streamed chat completion
	// sends (eventLog.textOnly).
	textOnly bool
}

// startTurn starts a turn on sess with an event log as its sink and
// watches it until it settles.
func (s *Server) startTurn(ctx context.Context, sess *session.Session, spec turnSpec) (*turnEntry, error) {
	if err := s.beginStart(); err != nil {
		return nil, err
	}
	defer s.endStart()
	log := newEventLog(s.opts.MaxTurnEventBytes)
	log.textOnly = spec.textOnly
	if spec.onStart != nil { // a kept turn: its log counts into its tenant's event bytes
		log.acct, log.budget = s.eventBytes(spec.tenant), int64(s.opts.MaxTenantEventBytes)
		log.trim = func() { s.trimEvents(spec.tenant) }
	}
	te := &turnEntry{tenant: spec.tenant, agentID: sess.Key().AgentID, log: log, req: spec.req, started: time.Now(),
		unstreamed: spec.unstreamed, done: make(chan struct{})}
	cfg := spec.cfg
	if !spec.unstreamed {
		cfg.Sinks = append(cfg.Sinks, log.sinkSpec())
	}
	t, err := sess.StartWithConfig(ctx, spec.req, cfg)
	if err != nil {
		return nil, err
	}
	te.turn = t
	if spec.onStart != nil {
		te.kept = true
		spec.onStart(te)
	}
	s.mu.Lock()
	s.running[te] = struct{}{}
	s.watchers.Add(1)
	s.mu.Unlock()
	if s.log.Enabled(ctx, slog.LevelInfo) {
		s.log.Info("turn started", "tenant", te.tenant, "agent", te.agentID, "context", sess.Key().ContextID, "run", t.RunID())
	}
	if !spec.unstreamed {
		go s.watch(te)
	}
	return te, nil
}

// watch records the turn's result once it settles.
func (s *Server) watch(te *turnEntry) {
	defer s.watchers.Done()
	res, err := te.turn.Wait(context.Background())
	te.res, te.err = res, err
	status, errText := agent.StatusFailed, ""
	if res != nil {
		status = res.Status
		if res.Err != nil {
			errText = res.Err.Error()
		}
	}
	if err != nil {
		errText = err.Error()
	}
	if !te.unstreamed { // no one reads the log of an unstreamed turn
		te.log.end(status, errText)
	}
	if s.opts.Recordings != nil {
		_ = s.opts.Recordings.Finish(te.turn.RunID(), te.req, res, err) // a recording already forgotten is no loss here
	}
	if te.kept {
		s.trimEvents(te.tenant)
	}
	s.mu.Lock()
	delete(s.running, te)
	s.notifyLocked()
	s.mu.Unlock()
	close(te.done)
	if !s.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	s.log.Info("turn settled", "tenant", te.tenant, "agent", te.agentID, "run", te.turn.RunID(),
		"status", status, "duration_ms", time.Since(te.started).Milliseconds(), "error", clipLog(errText))
}

// wait waits for the turn to settle, bounded by ctx.
func (te *turnEntry) wait(ctx context.Context) bool {
	select {
	case <-te.done:
		return true
	case <-ctx.Done():
		return false
	}
}

// turnView is a turn as the native API shows it.
type turnView struct {
	ID        string            `json:"id"`
	Agent     string            `json:"agent"`
	Status    string            `json:"status"`
	Started   time.Time         `json:"started"`
	Prompts   []promptView      `json:"prompts"`
	Pending   int               `json:"pending_steer"`
	Output    []message.Message `json:"output,omitempty"`
	Text      string            `json:"text,omitempty"`
	State     map[string]any    `json:"state,omitempty"`
	Usage     *agent.Usage      `json:"usage,omitempty"`
	Committed bool              `json:"committed,omitempty"`
	// Undelivered counts the steer messages the turn never took (the
	// seed's non-delivery report: session.pending_steer of its state).
	Undelivered int        `json:"undelivered_steer,omitempty"`
	Error       *errorView `json:"error,omitempty"`
}

type promptView struct {
	ID     string           `json:"id"`
	Prompt agent.UserPrompt `json:"prompt"`
}

type errorView struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// view describes the turn now.
func (te *turnEntry) view() turnView {
	v := turnView{ID: te.turn.RunID(), Agent: te.agentID, Status: string(te.turn.State()), Started: te.started,
		Pending: te.turn.PendingSteer(), Prompts: []promptView{}}
	for _, p := range te.log.openPrompts() {
		v.Prompts = append(v.Prompts, promptView{ID: p.PromptID, Prompt: p.Prompt})
	}
	select {
	case <-te.done:
	default:
		return v
	}
	res, err := te.res, te.err
	if res != nil {
		v.Status = string(res.Status)
		v.Output, v.State, v.Committed = res.Output, res.State, res.Committed
		v.Text = outputText(res.Output)
		u := res.Usage
		v.Usage = &u
		if n, ok := res.State[session.StatePendingSteer].(int); ok {
			v.Undelivered = n
		}
		err = errors.Join(res.Err, err)
	}
	if err != nil {
		v.Error = &errorView{Kind: fault.KindOr(err, fault.Internal).String(), Message: err.Error()}
	}
	v.Pending = 0
	return v
}

// outputText joins the text of the output messages, one per line.
func outputText(msgs []message.Message) string {
	out := ""
	for _, m := range msgs {
		if t := m.Text(); t != "" {
			if out != "" {
				out += "\n"
			}
			out += t
		}
	}
	return out
}

// eventBytes returns the counter of the event bytes the tenant's kept
// turns hold.
func (s *Server) eventBytes(tenant string) *atomic.Int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.tenantBytes[tenant]
	if !ok {
		n = new(atomic.Int64)
		s.tenantBytes[tenant] = n
	}
	return n
}

// trimEvents keeps the event bytes of the tenant's kept turns within
// Options.MaxTenantEventBytes: while they are over it, it frees the log of
// the tenant's oldest finished turn (REF 11.8.1). Under the budget it
// costs one counter read.
func (s *Server) trimEvents(tenant string) {
	acct, budget := s.eventBytes(tenant), int64(s.opts.MaxTenantEventBytes)
	if acct.Load() <= budget {
		return
	}
	s.mu.Lock()
	var finished []*turnEntry
	for _, e := range s.sessions {
		if e.tenant != tenant {
			continue
		}
		e.mu.Lock()
		for _, te := range e.turns {
			if te.log.isClosed() {
				finished = append(finished, te)
			}
		}
		e.mu.Unlock()
	}
	s.mu.Unlock()
	slices.SortFunc(finished, func(a, b *turnEntry) int { return a.started.Compare(b.started) })
	for _, te := range finished {
		if acct.Load() <= budget {
			return
		}
		if freed := te.log.free(); freed > 0 {
			s.log.Info("turn event log freed", "tenant", tenant, "run", te.turn.RunID(), "bytes", freed)
		}
	}
}
