package session_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadRecord reads a session's record straight from the store.
func (e *env) loadRecord(k session.Key) *agent.Checkpoint {
	e.t.Helper()
	cp, err := e.store.Load(context.Background(), session.SessionRecordID(k))
	require.NoError(e.t, err)
	return cp
}

type recordPayload struct {
	ResumableRunID string         `json:"resumable_run_id"`
	Request        *agent.Request `json:"request"`
}

func payloadOf(t testing.TB, cp *agent.Checkpoint) recordPayload {
	t.Helper()
	var p recordPayload
	if len(cp.Payload) > 0 {
		require.NoError(t, json.Unmarshal(cp.Payload, &p))
	}
	return p
}

// REF 2.6.1
func TestSessionRecordID(t *testing.T) {
	t.Parallel()
	k := session.Key{AgentID: "assistant", ContextID: "c1"}
	sum := sha256.Sum256([]byte("assistant\x00c1"))
	id := session.SessionRecordID(k)
	assert.Equal(t, "session-"+hex.EncodeToString(sum[:16]), id)
	assert.Equal(t, checkpoint.SessionKey(k.AgentID, k.ContextID), id)
	assert.NotEqual(t, id, session.SessionRecordID(session.Key{AgentID: "assistan", ContextID: "tc1"}), "the NUL keeps keys apart")
	assert.NotContains(t, id, "run-")
	require.NoError(t, checkpoint.ValidateExecID(id))
}

// The record: the committed board, the payload, the kind attribute.
// REF 2.6.1
// REF 2.6.2
func TestDurableCommittedRun(t *testing.T) {
	t.Parallel()
	eng := agenttest.New(agenttest.Checkpoint(), agenttest.SetVar("mood", "good"), agenttest.Reply("hello"))
	e := newDurableEnv(t, resumable{Engine: eng})
	tr := e.start("c", "hi")
	res := settle(t, tr)
	require.True(t, res.Committed)
	require.Len(t, eng.Runs()[0].Checkpoints, 1, "the run saved a checkpoint")

	assert.Equal(t, []string{session.SessionRecordID(key("c"))}, e.storeIDs(), "the run's checkpoint is deleted")
	rec := e.loadRecord(key("c"))
	assert.Equal(t, "state", rec.Attributes["runtime.session.kind"])
	assert.Equal(t, []string{"hi", "hello"}, texts(rec.Board.Channel(agent.MainChannel)), "the board is the committed history")
	assert.Equal(t, "good", rec.Board.Vars["mood"])
	assert.Empty(t, payloadOf(t, rec).ResumableRunID)
	_, ok, err := tr.Session().Resumable(context.Background())
	require.NoError(t, err)
	assert.False(t, ok)
}

// A run that does not commit is parked with its request; the history
// stays what the last committed run left.
// REF 2.6.2
// REF 2.2.17
func TestDurableParkedRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		steps  []agenttest.Step
		act    func(tr *session.Turn)
		status agent.Status
	}{
		{"interrupted", []agenttest.Step{agenttest.WaitInterrupt()},
			func(tr *session.Turn) { _ = tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}) }, agent.StatusInterrupted},
		{"canceled", []agenttest.Step{agenttest.Checkpoint(), agenttest.Hang()}, func(tr *session.Turn) { tr.Cancel() }, agent.StatusCanceled},
		{"failed", []agenttest.Step{agenttest.Checkpoint(), agenttest.Fail(nil)}, nil, agent.StatusFailed},
		{"aborted", []agenttest.Step{agenttest.Checkpoint(), agenttest.Fail(fault.New(fault.Aborted, "t", "stop"))}, nil, agent.StatusAborted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eng := agenttest.NewScript(func(call int, _ agent.Run) []agenttest.Step {
				if call == 1 {
					return []agenttest.Step{agenttest.Reply("first answer")}
				}
				return append([]agenttest.Step{agenttest.Reply("partial")}, tc.steps...)
			})
			e := newDurableEnv(t, resumable{Engine: eng})
			settle(t, e.start("c", "first"))
			history := e.loadRecord(key("c")).Board

			req := agent.Request{Message: userMsg("second"), Inputs: map[string]any{"n": 1.0}, Metadata: map[string]string{"m": "v"}}
			tr, err := e.open(key("c")).Session().Start(context.Background(), req)
			require.NoError(t, err)
			if tc.act != nil {
				eventually(t, func() bool { return len(eng.Runs()) == 2 && len(eng.Runs()[1].Steps) >= 2 }, "the engine runs")
				tc.act(tr)
			}
			res := settle(t, tr)
			require.Equal(t, tc.status, res.Status)
			require.False(t, res.Committed)

			rec := e.loadRecord(key("c"))
			assert.Equal(t, history, rec.Board, "the history is kept as it was")
			p := payloadOf(t, rec)
			assert.Equal(t, tr.RunID(), p.ResumableRunID)
			require.NotNil(t, p.Request)
			assert.Equal(t, "second", p.Request.Message.Text())
			assert.Equal(t, map[string]any{"n": 1.0}, p.Request.Inputs)
			assert.Equal(t, "v", p.Request.Metadata["m"])

			id, ok, err := tr.Session().Resumable(context.Background())
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, tr.RunID(), id)
			parked, ok, err := tr.Session().ParkedRequest(context.Background())
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, "second", parked.Message.Text())
		})
	}
}

// A fresh Start seeds its board from the stored history: the new message
// and inputs land on top, and preparers layer their channels and vars over
// it.
// REF 2.6.3
// REF 2.2.8
func TestDurableHistoryPrepended(t *testing.T) {
	t.Parallel()
	var seen *agent.Board
	eng := agenttest.NewScript(func(call int, _ agent.Run) []agenttest.Step {
		if call == 1 {
			return []agenttest.Step{agenttest.SetVar("x", "kept"), agenttest.SetVar("y", "old"), agenttest.Reply("one")}
		}
		return []agenttest.Step{agenttest.Func(func(_ context.Context, env *agenttest.Env) error {
			seen = env.Board().Clone()
			return nil
		})}
	})
	e := newDurableEnv(t, nil)
	prep := agent.PreparerFunc(func(ctx context.Context, run agent.Run, req agent.Request, b *agent.Board) error {
		if err := (agent.DefaultPreparer{}).Prepare(ctx, run, req, b); err != nil {
			return err
		}
		b.Append("notes", userMsg("note "+req.Message.Text()))
		return nil
	})
	e.agents.putAgent(&agent.Agent{ID: botID, Engine: resumable{Engine: eng}, Preparers: []agent.Preparer{prep}})
	settle(t, e.start("c", "first"))
	tr, err := e.open(key("c")).Session().Start(context.Background(),
		agent.Request{Message: userMsg("second"), Inputs: map[string]any{"y": "new"}})
	require.NoError(t, err)
	settle(t, tr)
	require.NotNil(t, seen)
	assert.Equal(t, []string{"first", "one", "second"}, texts(seen.Channel(agent.MainChannel)))
	assert.Equal(t, []string{"note first", "note second"}, texts(seen.Channel("notes")))
	assert.Equal(t, "kept", seen.Vars["x"])
	assert.Equal(t, "new", seen.Vars["y"], "inputs land on top of the history")

	// Without resume, nothing is loaded.
	plain := newEnvWith(t, workspaceStore(t, t.TempDir()), false, nil)
	plain.agents.putAgent(&agent.Agent{ID: botID, Engine: resumable{Engine: eng}, Preparers: []agent.Preparer{prep}})
	settle(t, plain.start("c", "third"))
	assert.Equal(t, []string{"third"}, texts(seen.Channel(agent.MainChannel)))
}

// Resume replays the parked run under its run id and request, from its
// checkpoint, with ResumeContext{Attempt 2, Signal "resume"}.
// REF 2.6.4
func TestResume(t *testing.T) {
	t.Parallel()
	var rc agent.ResumeContext
	var rcOK bool
	eng := agenttest.New(agenttest.Reply("before"), agenttest.WaitInterrupt(),
		agenttest.Func(func(ctx context.Context, _ *agenttest.Env) error {
			rc, rcOK = agent.ResumeFromContext(ctx)
			return nil
		}), agenttest.Reply("after"))
	e := newDurableEnv(t, resumable{Engine: eng})
	req := agent.Request{Message: userMsg("go"), Inputs: map[string]any{"k": "v"}}
	l := e.open(key("c"))
	tr, err := l.Session().Start(context.Background(), req)
	require.NoError(t, err)
	eventually(t, func() bool { return len(eng.Runs()) == 1 && len(eng.Runs()[0].Steps) == 2 }, "the engine waits")
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	require.Equal(t, agent.StatusInterrupted, settle(t, tr).Status)

	_, err = l.Session().ResumeWithConfig(context.Background(), session.StartConfig{Ephemeral: true})
	isKind(t, err, fault.Validation)
	_, err = l.Session().Resume(nil) //nolint:staticcheck // nil ctx on purpose
	isKind(t, err, fault.Validation)

	var sink textSink
	resumed, err := l.Session().Resume(context.Background(), session.SinkSpec{ID: "s", Sink: &sink})
	require.NoError(t, err)
	assert.Equal(t, tr.RunID(), resumed.RunID(), "the original run id")
	res := settle(t, resumed)
	require.Equal(t, agent.StatusCompleted, res.Status)
	assert.True(t, res.Committed)

	runs := eng.Runs()
	require.Len(t, runs, 2)
	second := runs[1]
	assert.True(t, second.Resumed)
	require.NotNil(t, second.Run.ResumeFrom)
	assert.Equal(t, tr.RunID(), second.Run.ResumeFrom.ExecID)
	assert.Equal(t, tr.RunID(), second.Run.ID)
	assert.Equal(t, "c", second.Run.ContextID)
	require.True(t, rcOK)
	assert.Equal(t, 2, rc.Attempt)
	assert.Equal(t, "resume", rc.Signal)
	assert.True(t, runs[0].Run.StartedAt.Equal(rc.StartedAt), "StartedAt is the original start")
	assert.True(t, runs[0].Run.StartedAt.Equal(second.Run.StartedAt))
	assert.Equal(t, []string{"go", "before", "after"}, texts(res.LastBoard.Channel(agent.MainChannel)))
	assert.Equal(t, "v", res.LastBoard.Vars["k"])
	assert.NotEmpty(t, sink.subjects(), "sinks attach to a resumed turn")

	// Committed: the parked marker and the run's checkpoint are gone.
	assert.Equal(t, []string{session.SessionRecordID(key("c"))}, e.storeIDs())
	_, err = l.Session().Resume(context.Background())
	isKind(t, err, fault.NotFound)
}

// wrongIDStore returns, for runs it was told about, a checkpoint that
// names another run.
type wrongIDStore struct {
	*checkpoint.Store
	run string
}

func (s *wrongIDStore) Load(ctx context.Context, id string) (*agent.Checkpoint, error) {
	cp, err := s.Store.Load(ctx, id)
	if cp != nil && id == s.run {
		cp.ExecID = "run-ffffffffffffffff"
	}
	return cp, err
}

// parkRun runs a turn that checkpoints and is interrupted, and returns it.
// Its lease is closed before it returns.
func parkRun(t *testing.T, e *env, contextID string) *session.Turn {
	t.Helper()
	l, err := e.m.Open(context.Background(), key(contextID))
	require.NoError(t, err)
	defer l.Close()
	tr, err := l.Session().Start(context.Background(), ask("go"))
	require.NoError(t, err)
	eventually(t, func() bool { return tr.State() == session.TurnRunning && e.hostRequests() != nil }, "the turn runs")
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	require.Equal(t, agent.StatusInterrupted, settle(t, tr).Status)
	_, ok, err := tr.Session().Resumable(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
	return tr
}

// REF 2.6.4
func TestResumeFailures(t *testing.T) {
	t.Parallel()
	steps := []agenttest.Step{agenttest.WaitInterrupt()}
	t.Run("ephemeral session", func(t *testing.T) {
		t.Parallel()
		e := newDurableEnv(t, resumable{Engine: agenttest.New(steps...)})
		tr := e.startConfig("c", "go", session.StartConfig{Ephemeral: true})
		require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
		settle(t, tr)
		_, err := tr.Session().Resume(context.Background())
		isKind(t, err, fault.NotFound)
	})
	t.Run("nothing parked", func(t *testing.T) {
		t.Parallel()
		e := newDurableEnv(t, resumable{Engine: agenttest.New()})
		_, err := e.open(key("c")).Session().Resume(context.Background())
		isKind(t, err, fault.NotFound)
		settle(t, e.start("c", "hi"))
		_, err = e.open(key("c")).Session().Resume(context.Background())
		isKind(t, err, fault.NotFound)
	})
	t.Run("resume off", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, resumable{Engine: agenttest.New()})
		_, err := e.open(key("c")).Session().Resume(context.Background())
		isKind(t, err, fault.NotFound)
	})
	t.Run("checkpoint gone", func(t *testing.T) {
		t.Parallel()
		e := newDurableEnv(t, resumable{Engine: agenttest.New(steps...)})
		tr := parkRun(t, e, "c")
		require.NoError(t, e.store.(agent.CheckpointDeleter).Delete(context.Background(), tr.RunID()))
		_, err := tr.Session().Resume(context.Background())
		isKind(t, err, fault.NotFound)
		_, ok, err := tr.Session().Resumable(context.Background())
		require.NoError(t, err)
		assert.False(t, ok, "the marker is cleared")
	})
	t.Run("checkpoint of another run", func(t *testing.T) {
		t.Parallel()
		st := &wrongIDStore{Store: workspaceStore(t, t.TempDir())}
		e := newEnvWith(t, st, true, resumable{Engine: agenttest.New(steps...)})
		tr := parkRun(t, e, "c")
		st.run = tr.RunID()
		_, err := tr.Session().Resume(context.Background())
		isKind(t, err, fault.Validation)
	})
	t.Run("engine cannot resume", func(t *testing.T) {
		t.Parallel()
		e := newDurableEnv(t, agenttest.New(steps...))
		tr := parkRun(t, e, "c")
		_, err := tr.Session().Resume(context.Background())
		isKind(t, err, fault.NotAvailable)
	})
	t.Run("CanResume refuses", func(t *testing.T) {
		t.Parallel()
		refuse := fault.New(fault.Conflict, "engine", "graph changed")
		e := newDurableEnv(t, resumable{Engine: agenttest.New(steps...), refuse: refuse})
		tr := parkRun(t, e, "c")
		_, err := tr.Session().Resume(context.Background())
		require.ErrorIs(t, err, refuse)
		assert.Contains(t, err.Error(), tr.RunID())
	})
	t.Run("stored request missing", func(t *testing.T) {
		t.Parallel()
		e := newDurableEnv(t, resumable{Engine: agenttest.New(steps...)})
		tr := parkRun(t, e, "c")
		rec := e.loadRecord(key("c"))
		rec.Payload = json.RawMessage(`{"resumable_run_id":"` + tr.RunID() + `"}`)
		require.NoError(t, e.store.Save(context.Background(), *rec))
		_, err := tr.Session().Resume(context.Background())
		isKind(t, err, fault.Validation)
	})
}

// REF 2.6.5
func TestResumableAndParkedRequestCopies(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, resumable{Engine: agenttest.New(agenttest.WaitInterrupt())})
	s := e.open(key("c")).Session()
	_, _, err := s.Resumable(nil) //nolint:staticcheck // nil ctx on purpose
	isKind(t, err, fault.Validation)
	_, _, err = s.ParkedRequest(nil) //nolint:staticcheck // nil ctx on purpose
	isKind(t, err, fault.Validation)
	_, ok, err := s.ParkedRequest(context.Background())
	require.NoError(t, err)
	assert.False(t, ok)

	tr, err := s.Start(context.Background(), agent.Request{Message: userMsg("go"), Inputs: map[string]any{"list": []any{"a"}}})
	require.NoError(t, err)
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	settle(t, tr)
	req, ok, err := s.ParkedRequest(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, tr.RunID(), req.RunID)
	req.Inputs["list"].([]any)[0] = "changed"
	req.Message.Parts[0].Text = "changed"
	again, _, err := s.ParkedRequest(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "a", again.Inputs["list"].([]any)[0], "the request is a copy")
	assert.Equal(t, "go", again.Message.Text())
}

// Ephemeral sessions write nothing, load nothing and park nothing.
// REF 2.6.6
func TestEphemeralWritesNothing(t *testing.T) {
	t.Parallel()
	eng := agenttest.NewScript(func(call int, _ agent.Run) []agenttest.Step {
		if call == 1 {
			return []agenttest.Step{agenttest.Checkpoint(), agenttest.Reply("ok")}
		}
		return []agenttest.Step{agenttest.Checkpoint(), agenttest.WaitInterrupt()}
	})
	e := newDurableEnv(t, resumable{Engine: eng})
	// History stored for the key by an earlier life of the session.
	history := agent.NewBoard()
	history.Append(agent.MainChannel, userMsg("old question"))
	require.NoError(t, e.store.Save(context.Background(), agent.Checkpoint{
		ExecID: session.SessionRecordID(key("c")), Board: history, Timestamp: time.Now(),
	}))
	before := e.storeIDs()

	res := settle(t, e.startConfig("c", "hi", session.StartConfig{Ephemeral: true}))
	assert.Equal(t, []string{"hi", "ok"}, texts(res.LastBoard.Channel(agent.MainChannel)), "no history is loaded")
	tr := e.startConfig("c", "again", session.StartConfig{Ephemeral: true})
	eventually(t, func() bool { return len(eng.Runs()) == 2 && len(eng.Runs()[1].Steps) == 2 }, "the engine waits")
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	require.Equal(t, agent.StatusInterrupted, settle(t, tr).Status)

	assert.Equal(t, before, e.storeIDs(), "no run checkpoint and no session state written")
	assert.Equal(t, history, e.loadRecord(key("c")).Board)
	_, ok, err := tr.Session().Resumable(context.Background())
	require.NoError(t, err)
	assert.False(t, ok, "never parked")
	for _, r := range eng.Runs() {
		assert.NotEmpty(t, r.Checkpoints, "the engine's checkpoints were accepted and dropped")
	}
}

// REF 2.6.7
func TestResumeDuringDrain(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, resumable{Engine: agenttest.New(agenttest.WaitInterrupt())})
	tr := parkRun(t, e, "c")
	require.NoError(t, e.m.Drain(context.Background()))
	_, err := tr.Session().Resume(context.Background())
	require.ErrorIs(t, err, session.ErrManagerDraining)
	_, ok, err := tr.Session().Resumable(context.Background())
	require.NoError(t, err)
	assert.True(t, ok, "the parked run is still there")
}

// A fresh run supersedes the parked one: the parked run can never be
// resumed again, so its checkpoint is deleted with the marker.
// REF 2.6.2
func TestDurableSupersededParkedRun(t *testing.T) {
	t.Parallel()
	eng := agenttest.NewScript(func(call int, _ agent.Run) []agenttest.Step {
		if call == 2 {
			return []agenttest.Step{agenttest.Checkpoint(), agenttest.Reply("fresh")}
		}
		return []agenttest.Step{agenttest.Checkpoint(), agenttest.WaitInterrupt()}
	})
	e := newDurableEnv(t, resumable{Engine: eng})
	first := parkRun(t, e, "c")
	assert.ElementsMatch(t, []string{first.RunID(), session.SessionRecordID(key("c"))}, e.storeIDs())

	fresh := e.start("c", "new")
	require.True(t, settle(t, fresh).Committed)
	assert.Equal(t, []string{session.SessionRecordID(key("c"))}, e.storeIDs(), "no orphaned checkpoint")

	third := parkRun(t, e, "c")
	fourth := parkRun(t, e, "c")
	assert.ElementsMatch(t, []string{fourth.RunID(), session.SessionRecordID(key("c"))}, e.storeIDs(),
		"parking a new run drops the checkpoint of the one it replaces (%s)", third.RunID())
}

// Resume while a turn runs: the turn is interrupted first, parks itself,
// and that run is the one resumed.
// REF 2.6.4
// REF 2.2.6
func TestResumeStopsActiveTurnFirst(t *testing.T) {
	t.Parallel()
	eng := agenttest.New(agenttest.Checkpoint(), agenttest.WaitInterrupt(), agenttest.Reply("resumed"))
	e := newDurableEnv(t, resumable{Engine: eng})
	older := parkRun(t, e, "c")
	active := e.start("c", "newer")
	eventually(t, func() bool { return len(eng.Runs()) == 2 }, "the second run starts")
	resumed, err := active.Session().Resume(context.Background())
	require.NoError(t, err)
	assert.Equal(t, agent.StatusInterrupted, settle(t, active).Status)
	assert.Equal(t, agent.CauseUserInput, eng.Runs()[1].Interrupts[0].Cause)
	assert.Equal(t, active.RunID(), resumed.RunID(), "the run just parked is resumed, not %s", older.RunID())
	res := settle(t, resumed)
	assert.True(t, res.Committed)
	assert.Equal(t, []string{session.SessionRecordID(key("c"))}, e.storeIDs())
}

// An interrupted turn whose authoritative sink acknowledged part of the
// answer commits exactly that part, and the history keeps it.
// REF 2.4.14
// REF 2.6.2
func TestDurableCommitsAcknowledgedPrefix(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	eng := agenttest.New(agenttest.Emit("Hel"), agenttest.Reply("Hello"), agenttest.WaitGate(g), agenttest.PollInterrupt())
	e := newDurableEnv(t, resumable{Engine: eng})
	t.Cleanup(g.Open)
	var sink textSink
	tr, err := e.open(key("c")).Session().Start(context.Background(), ask("hi"), session.SinkSpec{
		ID: "ui", Sink: &sink, Visibility: session.VisibilityConfirmed, Authority: session.AuthorityAuthoritative,
	})
	require.NoError(t, err)
	reached(t, g)
	eventually(t, func() bool { return len(sink.text()) == 1 }, "the first delta is delivered")
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	g.Open()
	res := settle(t, tr)
	assert.Equal(t, agent.StatusInterrupted, res.Status)
	assert.True(t, res.Committed, "the turn's referee accepts the acknowledged prefix")
	assert.Equal(t, "Hel", agenttest.ReplyText(res.Output))
	assert.Equal(t, []string{"hi", "Hel"}, texts(e.loadRecord(key("c")).Board.Channel(agent.MainChannel)))
	_, ok, err := tr.Session().Resumable(context.Background())
	require.NoError(t, err)
	assert.False(t, ok, "a committed run is not parked")
}

// A turn's History seeds its board before the request in place of the
// session's stored history, and a history holding an invalid message is
// refused.
func TestStartHistory(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, resumable{Engine: agenttest.New(agenttest.Reply("ok"))})
	hist := agent.NewBoard()
	hist.Append(agent.MainChannel, message.NewTextMessage(message.RoleSystem, "be brief"), userMsg("earlier"),
		message.NewTextMessage(message.RoleAssistant, "noted"))
	res := settle(t, e.startConfig("c", "now", session.StartConfig{Ephemeral: true, History: hist}))
	assert.Equal(t, []string{"be brief", "earlier", "noted", "now", "ok"}, texts(res.LastBoard.Channel(agent.MainChannel)))
	assert.Equal(t, []string{"ok"}, texts(res.Output), "the history is not output")

	bad := agent.NewBoard()
	bad.Append(agent.MainChannel, message.Message{Role: "nobody"})
	_, err := e.open(key("d")).Session().StartWithConfig(context.Background(), ask("x"),
		session.StartConfig{Ephemeral: true, History: bad})
	isKind(t, err, fault.Validation)
}
