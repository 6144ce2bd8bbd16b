package local

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/session"
)

// cancelWait bounds the wait for a turn that was cancelled because the
// delegation's ctx ended, and the clean-up of a delegation's session.
const cancelWait = 10 * time.Second

// runTurn runs req as a turn of the target's session in m (REF
// 6.2.4): the session is {target, the provider's context id or a fresh
// ctx-<hex>}; the turn refuses AskUser, is ephemeral unless the provider
// is persistent, streams to the caller's sinks downgraded to observers,
// and is cancelled and waited for when ctx ends.
func (s *Service) runTurn(ctx context.Context, m *session.Manager, depth int, rec *record, req delegation.Request) (*agent.Result, error) {
	cid, err := s.provider.ContextID(ctx, req)
	if err != nil {
		return nil, err
	}
	if cid == "" {
		cid = "ctx-" + randomHex(8)
	}
	persistent := s.provider.Persistent()
	key := session.Key{AgentID: req.Target, ContextID: cid}
	lease, err := m.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer s.release(ctx, m, lease, key, persistent)
	areq := agent.Request{Message: req.Input, Inputs: req.Inputs, Metadata: req.Metadata}
	turn, err := s.startTurn(delegation.ContextWithDepth(ctx, depth), lease.Session(), areq, turnOptions(ctx, persistent), persistent)
	if err != nil {
		return nil, err
	}
	rec.setRunning(turn.RunID())
	return awaitTurn(ctx, turn)
}

// turnOptions are the start options of a delegated turn.
func turnOptions(ctx context.Context, persistent bool) session.StartConfig {
	cfg := session.StartConfig{AskUser: refuseAskUser, Ephemeral: !persistent}
	if p, ok := session.StreamPolicyFromContext(ctx); ok {
		cfg.Sinks = p.Inherited()
	}
	return cfg
}

func refuseAskUser(context.Context, agent.UserPrompt) (agent.UserReply, error) {
	return agent.UserReply{}, fault.New(fault.NotAvailable, "ask user", "a delegated run cannot ask the user")
}

// startTurn resumes the session's parked run when the provider is
// persistent and the parked request asks the same (role, text and inputs);
// otherwise, or when the resume fails, it starts a fresh turn (REF
// 6.2.5).
func (s *Service) startTurn(ctx context.Context, sess *session.Session, req agent.Request, opts session.StartConfig, persistent bool) (*session.Turn, error) {
	if persistent {
		parked, ok, err := sess.ParkedRequest(ctx)
		switch {
		case err != nil:
			s.logger.Warn("delegation: read parked run; starting afresh", "session", sess.Key().String(), "error", err)
		case ok && sameAsk(parked, req):
			turn, err := sess.ResumeWithConfig(ctx, opts)
			if err == nil {
				return turn, nil
			}
			s.logger.Warn("delegation: resume parked run; starting afresh", "session", sess.Key().String(), "error", err)
		}
	}
	return sess.StartWithConfig(ctx, req, opts)
}

// sameAsk reports whether two requests carry the same role, text and
// inputs (inputs compared in their JSON form, as a parked request was
// stored).
func sameAsk(a, b agent.Request) bool {
	if a.Message.Role != b.Message.Role || a.Message.Text() != b.Message.Text() {
		return false
	}
	if len(a.Inputs) == 0 && len(b.Inputs) == 0 {
		return true
	}
	ja, errA := json.Marshal(a.Inputs)
	jb, errB := json.Marshal(b.Inputs)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// awaitTurn waits for turn. When ctx ends first the turn is interrupted
// if ctx's cause is an interrupt (the caller's run was interrupted: the
// sub-run stops as the caller does, resumable), else cancelled; either
// way it is waited for, bounded by cancelWait, and an interrupted turn
// that does not stop in that time is cancelled.
func awaitTurn(ctx context.Context, turn *session.Turn) (*agent.Result, error) {
	res, err := turn.Wait(ctx)
	if err == nil || ctx.Err() == nil {
		return res, err
	}
	var ie *agent.InterruptedError
	if errors.As(context.Cause(ctx), &ie) && turn.Interrupt(ie.Interrupt) == nil {
		if res, werr := waitAtMost(turn, cancelWait); werr == nil {
			return res, nil
		}
	}
	turn.Cancel()
	if res, werr := waitAtMost(turn, cancelWait); werr == nil {
		return res, nil
	}
	return nil, err
}

// waitAtMost waits for turn for at most d.
func waitAtMost(turn *session.Turn, d time.Duration) (*agent.Result, error) {
	wctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return turn.Wait(wctx)
}

// release closes the lease and, for a session nobody will use again,
// deletes it so that it does not count against max_sessions.
func (s *Service) release(ctx context.Context, m *session.Manager, lease *session.Lease, key session.Key, persistent bool) {
	lease.Close()
	if persistent {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer cancel()
	if err := m.DeleteSession(dctx, key); err != nil {
		s.logger.Debug("delegation: delete session", "session", key.String(), "error", err)
	}
}

// runLegacy runs req with agent.Execute (REF 6.2.6): a sync call
// with a caller host inherits that host with its steer source withheld,
// and its interrupt channel too when the caller watches its interrupts
// (delegation.WithInterruptsWatched: an interrupt of the caller then
// reaches the run as the cause of its ended ctx); otherwise the run gets
// the worker host (agent.NoopHost). Either way the host offers this
// service at the run's depth.
func (s *Service) runLegacy(ctx context.Context, depth int, rec *record, req delegation.Request, caller agent.Host) (*agent.Result, error) {
	src, ok := s.dir.(AgentSource)
	if !ok {
		return nil, fault.New(fault.NotAvailable, "delegate",
			"target %q: the directory cannot run agents and no session manager is bound", req.Target)
	}
	ag, ok := src.Agent(req.Target)
	if !ok {
		return nil, fault.New(fault.NotFound, "delegate", "agent %q is not deployed", req.Target)
	}
	var host agent.Host = agent.NoopHost{}
	if caller != nil && !agent.IsNil(caller) {
		// When the caller watches its interrupts, they stay the caller's:
		// the sub-run learns of one through ctx, ended with the interrupt
		// as its cause.
		host = &noSteerHost{inner: caller, noInterrupts: delegation.InterruptsWatched(ctx)}
	}
	host = delegation.WithService(host, delegation.AtDepth(s, depth))
	runID := agent.NewRunID()
	rec.setRunning(runID)
	areq := agent.Request{RunID: runID, Message: req.Input, Inputs: req.Inputs, Metadata: req.Metadata}
	return agent.Execute(delegation.ContextWithDepth(ctx, depth), ag, host, areq)
}
