package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
)

// Durable session state (REF 2.6): one record per session in the
// checkpoint store, under SessionRecordID(key).
const (
	sessionKindAttr  = "runtime.session.kind"
	sessionKindState = "state"
	durableTimeout   = 5 * time.Second
)

// SessionRecordID returns the store id of a session's record: "session-" +
// the first 16 bytes of sha256(AgentID NUL ContextID) in hex. It cannot
// collide with run ids ("run-…") or prompt ids (bare hex).
func SessionRecordID(key Key) string {
	sum := sha256.Sum256([]byte(key.AgentID + "\x00" + key.ContextID))
	return "session-" + hex.EncodeToString(sum[:16])
}

// recordPayload is the payload of a session record.
type recordPayload struct {
	ResumableRunID string         `json:"resumable_run_id,omitempty"`
	Request        *agent.Request `json:"request,omitempty"`
}

type record struct {
	board   *agent.Board
	payload recordPayload
	found   bool // the store holds a record
}

// empty reports whether the store held no record.
func (r record) empty() bool { return !r.found }

// loadRecord returns the session's record; a missing one is empty. A
// record that does not decode is an Internal error (the store's own
// corruption errors pass through).
func loadRecord(ctx context.Context, store agent.CheckpointStore, key Key) (record, error) {
	cp, err := store.Load(ctx, SessionRecordID(key))
	if err != nil || cp == nil {
		return record{board: agent.NewBoard()}, err
	}
	rec := record{board: cp.Board, found: true}
	if len(cp.Payload) > 0 {
		if err := json.Unmarshal(cp.Payload, &rec.payload); err != nil {
			return rec, fault.Wrap(fault.Internal, err, "load session record", "%s: corrupt payload", key)
		}
	}
	if rec.board == nil {
		rec.board = agent.NewBoard()
	}
	return rec, nil
}

func saveRecord(ctx context.Context, store agent.CheckpointStore, key Key, rec record) error {
	payload, err := json.Marshal(rec.payload)
	if err != nil {
		return fault.Wrap(fault.Internal, err, "save session record", "%s", key)
	}
	return store.Save(ctx, agent.Checkpoint{
		ExecID:     SessionRecordID(key),
		Board:      rec.board,
		Payload:    payload,
		Attributes: map[string]string{sessionKindAttr: sessionKindState},
		Timestamp:  time.Now().UTC(),
	})
}

// loadHistory returns the committed board that seeds a fresh Start
// (REF 2.2.8, 2.6.3) and the run parked before it, if any.
func loadHistory(ctx context.Context, store agent.CheckpointStore, key Key) (*agent.Board, string, error) {
	rec, err := loadRecord(ctx, store, key)
	if err != nil {
		return nil, "", fault.Wrap(fault.KindOr(err, fault.Internal), err, "start turn", "load history")
	}
	return rec.board, rec.payload.ResumableRunID, nil
}

// markInFlight records, before a fresh run executes, that the session's
// run is t's, with its request, over the history it starts from
// (REF 12.6.3): should the process die before the turn ends, the run is
// parked at its last checkpoint, and any node can Resume it. Best-effort
// like persist: a run that could not be marked runs all the same.
func (t *Turn) markInFlight(history *agent.Board) {
	ctx, cancel := context.WithTimeout(ContextWithClaim(context.Background(), t.claim), durableTimeout)
	defer cancel()
	req := t.req.Clone()
	rec := record{board: history, payload: recordPayload{ResumableRunID: t.runID, Request: &req}}
	if err := saveRecord(ctx, t.ep.deps.Checkpoints, t.s.key, rec); err != nil {
		t.s.m.logger.Warn("mark run in flight", "session", t.s.key.String(), "run", t.runID, "error", err)
	}
}

// persist writes the session record after a turn (REF 2.6.2): a
// committed run becomes the history and its checkpoint is deleted; any
// other outcome parks the run and its request over the same history. A run
// that was parked before and is superseded by this one can never be resumed
// again, so its checkpoint is deleted too. The record is saved before any
// checkpoint is deleted, so a crash in between leaves at worst an orphaned
// checkpoint, never a record that names a missing one. Best-effort, with a
// 5 s budget of its own.
func (t *Turn) persist(res *agent.Result) {
	ctx, cancel := context.WithTimeout(ContextWithClaim(context.Background(), t.claim), durableTimeout)
	defer cancel()
	store := t.ep.deps.Checkpoints
	key := t.s.key
	log := t.s.m.logger
	rec, err := loadRecord(ctx, store, key)
	if err != nil {
		log.Warn("load session record", "session", key.String(), "error", err)
		rec = record{board: agent.NewBoard()}
	}
	superseded := rec.payload.ResumableRunID
	var drop []string
	if res != nil && res.Committed {
		if res.LastBoard != nil {
			rec.board = res.LastBoard
		}
		rec.payload = recordPayload{}
		drop = append(drop, t.runID)
	} else {
		req := t.req.Clone()
		rec.payload = recordPayload{ResumableRunID: t.runID, Request: &req}
	}
	for _, id := range []string{superseded, t.superseded} {
		if id != "" && id != t.runID && !slices.Contains(drop, id) {
			drop = append(drop, id)
		}
	}
	if err := saveRecord(ctx, store, key, rec); err != nil {
		log.Warn("save session record", "session", key.String(), "error", err)
		return
	}
	d, ok := store.(agent.CheckpointDeleter)
	if !ok {
		return
	}
	for _, id := range drop {
		if err := d.Delete(ctx, id); err != nil {
			log.Warn("delete run checkpoint", "session", key.String(), "run", id, "error", err)
		}
	}
}

// Resumable reports the parked run of the session, if any (REF
// 2.6.5).
func (s *Session) Resumable(ctx context.Context) (runID string, ok bool, err error) {
	rec, err := s.parked(ctx)
	if err != nil || rec.payload.ResumableRunID == "" {
		return "", false, err
	}
	return rec.payload.ResumableRunID, true, nil
}

// ParkedRequest returns a copy of the parked run's request, if any.
func (s *Session) ParkedRequest(ctx context.Context) (agent.Request, bool, error) {
	rec, err := s.parked(ctx)
	if err != nil || rec.payload.ResumableRunID == "" || rec.payload.Request == nil {
		return agent.Request{}, false, err
	}
	return rec.payload.Request.Clone(), true, nil
}

// parked loads the record when the session keeps durable state.
func (s *Session) parked(ctx context.Context) (record, error) {
	if ctx == nil {
		return record{}, fault.New(fault.Validation, "resumable", "ctx must not be nil")
	}
	deps := s.m.Deps()
	if s.Ephemeral() || !deps.Resume || deps.Checkpoints == nil {
		return record{}, nil
	}
	return loadRecord(ctx, deps.Checkpoints, s.key)
}

// Resume replays the parked run under its original run id and request
// (REF 2.6.4).
func (s *Session) Resume(ctx context.Context, sinks ...SinkSpec) (*Turn, error) {
	return s.ResumeWithConfig(ctx, StartConfig{Sinks: sinks})
}

// ResumeWithConfig is Resume configured by cfg; cfg.Ephemeral is refused
// (Validation).
func (s *Session) ResumeWithConfig(ctx context.Context, cfg StartConfig) (*Turn, error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "resume", "ctx must not be nil")
	}
	cfg, err := cfg.owned()
	if err != nil {
		return nil, err
	}
	if cfg.Ephemeral {
		return nil, fault.New(fault.Validation, "resume", "an ephemeral session has nothing to resume")
	}
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if err := s.resumeRefused(); err != nil {
		return nil, err // refused before the active turn is touched (REF 2.6.4)
	}
	// The start is marked in flight before the record is read, so that a
	// DeleteSession waits for it or refuses it, and a Resume never rewrites
	// a record that a delete removed (REF 2.7.7).
	if err := s.beginStart(false); err != nil {
		return nil, err
	}
	defer s.endStart()
	// The active turn is stopped first: it may park itself as it ends,
	// and that is the run to resume.
	if err := s.stopActive(ctx); err != nil {
		return nil, err
	}
	// The key is claimed before the parked run is read, so that no other
	// node changes it in between; what resumeState writes (the mark of a
	// run whose checkpoint is gone) carries the claim, so a store fences it.
	c, err := s.claim(ctx, s.m.Deps().Ownership)
	if err != nil {
		return nil, err
	}
	req, rs, err := s.resumeState(ContextWithClaim(ctx, c))
	if err != nil {
		_ = c.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	rs.claim = c
	t, err := s.launch(ctx, req, cfg, rs)
	if err != nil {
		_ = c.Release(context.WithoutCancel(ctx)) // idempotent: launch may have released it
	}
	return t, err
}

// resumeRefused checks what Resume can refuse without reading the parked
// run: a draining manager (REF 2.6.7) and a session that keeps no
// durable state (REF 2.6.4). It runs under startMu.
func (s *Session) resumeRefused() error {
	if s.m.Draining() {
		return ErrManagerDraining
	}
	deps := s.m.Deps()
	if s.Ephemeral() || !deps.Resume || deps.Checkpoints == nil {
		return fault.New(fault.NotFound, "resume", "session %s keeps no durable state", s.key)
	}
	return nil
}

// resumeState checks the parked run and loads its checkpoint.
func (s *Session) resumeState(ctx context.Context) (agent.Request, *resumeState, error) {
	deps := s.m.Deps()
	if s.Ephemeral() || !deps.Resume || deps.Checkpoints == nil {
		return agent.Request{}, nil, fault.New(fault.NotFound, "resume", "session %s keeps no durable state", s.key)
	}
	rec, err := loadRecord(ctx, deps.Checkpoints, s.key)
	if err != nil {
		return agent.Request{}, nil, err
	}
	runID := rec.payload.ResumableRunID
	if runID == "" {
		return agent.Request{}, nil, fault.New(fault.NotFound, "resume", "session %s has no parked run", s.key)
	}
	cp, err := deps.Checkpoints.Load(ctx, runID)
	if err != nil {
		return agent.Request{}, nil, err
	}
	if cp == nil {
		rec.payload = recordPayload{}
		if err := saveRecord(ctx, deps.Checkpoints, s.key, rec); err != nil {
			return agent.Request{}, nil, err
		}
		return agent.Request{}, nil, fault.New(fault.NotFound, "resume", "checkpoint of parked run %s is gone", runID)
	}
	if cp.ExecID != runID {
		return agent.Request{}, nil, fault.New(fault.Validation, "resume", "checkpoint exec id %q does not match parked run %q", cp.ExecID, runID)
	}
	if rec.payload.Request == nil {
		return agent.Request{}, nil, fault.New(fault.Validation, "resume", "parked run %s has no stored request", runID)
	}
	ag, ok := deps.Resolver.Agent(s.key.AgentID)
	if !ok {
		return agent.Request{}, nil, fault.New(fault.NotFound, "resume", "agent %q is not deployed", s.key.AgentID)
	}
	r, ok := ag.Engine.(agent.Resumer)
	if !ok {
		return agent.Request{}, nil, fault.New(fault.NotAvailable, "resume", "the engine of agent %q cannot resume", s.key.AgentID)
	}
	if err := r.CanResume(*cp); err != nil {
		return agent.Request{}, nil, fmt.Errorf("resume %s: %w", runID, err)
	}
	return rec.payload.Request.Clone(), &resumeState{runID: runID, cp: cp}, nil
}

// deleteDurable removes a session's record and parked-run checkpoint
// through store (REF 2.7.6): load the record, delete the parked run's
// checkpoint, delete the record. A corrupt record is deleted anyway and its
// decode error returned. A store that cannot delete is NotAvailable, unless
// it holds nothing for the key.
func deleteDurable(ctx context.Context, store agent.CheckpointStore, key Key) error {
	rec, loadErr := loadRecord(ctx, store, key)
	if loadErr != nil && fault.KindOf(loadErr) != fault.Internal {
		return loadErr
	}
	d, ok := store.(agent.CheckpointDeleter)
	if !ok {
		if loadErr == nil && rec.empty() {
			return nil
		}
		return fault.New(fault.NotAvailable, "delete session", "%s: the checkpoint store cannot delete", key)
	}
	if id := rec.payload.ResumableRunID; id != "" {
		if err := d.Delete(ctx, id); err != nil {
			return err
		}
	}
	if err := d.Delete(ctx, SessionRecordID(key)); err != nil {
		return err
	}
	return loadErr
}
