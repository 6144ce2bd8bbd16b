package session_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type failingPreparer struct{ err error }

func (p failingPreparer) Prepare(context.Context, agent.Run, agent.Request, *agent.Board) error {
	return p.err
}

// REF 2.2.14
func TestTurnTerminalStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		steps  []agenttest.Step
		prep   error
		act    func(tr *session.Turn)
		want   session.TurnState
		status agent.Status
		infra  bool
	}{
		{name: "completed", want: session.TurnCompleted, status: agent.StatusCompleted},
		{name: "interrupted", steps: []agenttest.Step{agenttest.WaitInterrupt()},
			act:  func(tr *session.Turn) { _ = tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}) },
			want: session.TurnInterrupted, status: agent.StatusInterrupted},
		{name: "canceled", steps: []agenttest.Step{agenttest.Hang()}, act: func(tr *session.Turn) { tr.Cancel() },
			want: session.TurnCanceled, status: agent.StatusCanceled},
		{name: "failed", steps: []agenttest.Step{agenttest.Fail(nil)}, want: session.TurnFailed, status: agent.StatusFailed},
		{name: "aborted", steps: []agenttest.Step{agenttest.Fail(fault.New(fault.Aborted, "test", "stop"))},
			want: session.TurnAborted, status: agent.StatusAborted},
		{name: "nil result, canceled error", prep: context.Canceled, want: session.TurnCanceled, infra: true},
		{name: "nil result, deadline error", prep: context.DeadlineExceeded, want: session.TurnCanceled, infra: true},
		{name: "nil result, other error", prep: fault.New(fault.Internal, "prep", "boom"), want: session.TurnFailed, infra: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eng := agenttest.New(tc.steps...)
			e := newEnv(t, nil)
			ag := &agent.Agent{ID: botID, Engine: eng}
			if tc.prep != nil {
				ag.Preparers = []agent.Preparer{failingPreparer{tc.prep}}
			}
			e.agents.putAgent(ag)
			tr := e.start("c", "hi")
			if tc.act != nil {
				assert.False(t, tr.State().Terminal())
				eventually(t, func() bool { return len(eng.Runs()) == 1 }, "the engine runs")
				tc.act(tr)
			}
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			res, err := tr.Wait(ctx)
			if tc.infra {
				require.Error(t, err)
				assert.Nil(t, res)
			} else {
				require.NoError(t, err, "business outcomes are not errors")
				assert.Equal(t, tc.status, res.Status)
			}
			assert.Equal(t, tc.want, tr.State())
			assert.True(t, tr.State().Terminal())
		})
	}
	for _, s := range []session.TurnState{session.TurnStarting, session.TurnRunning, session.TurnInterrupting} {
		assert.False(t, s.Terminal(), s)
	}
}

// REF 2.2.15
func TestWait(t *testing.T) {
	t.Parallel()
	e, g := gatedEnv(t)
	tr := e.start("c", "hi")
	_, err := tr.Wait(nil) //nolint:staticcheck // nil ctx on purpose
	isKind(t, err, fault.Validation)
	_, err = tr.Wait(expired())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, session.TurnRunning, tr.State(), "a Wait whose ctx ends leaves the turn alone")
	g.Open()
	first := settle(t, tr)
	for range 3 {
		res, err := tr.Wait(context.Background())
		require.NoError(t, err)
		assert.Same(t, first, res, "every Wait returns the same result")
	}
	res, err := tr.Wait(expired())
	require.NoError(t, err, "a settled turn answers even with an ended ctx")
	assert.Same(t, first, res)

	// A business failure is a result, not an error.
	failing := newEnv(t, agenttest.New(agenttest.Fail(nil)))
	res = settle(t, failing.start("c", "hi"))
	assert.Equal(t, agent.StatusFailed, res.Status)
	require.Error(t, res.Err)
}

// REF 2.2.16
func TestInterrupt(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	eng := agenttest.New(agenttest.WaitGate(g), agenttest.PollInterrupt(), agenttest.Reply("not reached"))
	e := newEnv(t, eng)
	t.Cleanup(g.Open)
	tr := e.start("c", "hi")
	reached(t, g)

	isKind(t, tr.Interrupt(agent.Interrupt{Cause: "bored"}), fault.Validation)
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "stop"}))
	assert.Equal(t, session.TurnInterrupting, tr.State())
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseCustom}), "later calls return nil")
	// Cooperative: the engine, parked at the gate, is not stopped.
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, session.TurnInterrupting, tr.State())
	g.Open()
	res := settle(t, tr)
	assert.Equal(t, agent.StatusInterrupted, res.Status)
	assert.Equal(t, []agent.Interrupt{{Cause: agent.CauseUserCancel, Detail: "stop"}}, eng.Runs()[0].Interrupts, "the first cause wins")
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}), "a terminal turn returns nil")
	assert.Equal(t, session.TurnInterrupted, tr.State())
}

// An interrupt resolves every pending prompt as interrupted.
// REF 2.2.16
func TestInterruptResolvesPrompts(t *testing.T) {
	t.Parallel()
	eng := agenttest.New(agenttest.AskUser("name?"))
	e := newEnv(t, eng)
	resolved := recordBus(t, e.bus, session.PatternPromptResolved())
	requested := recordBus(t, e.bus, session.PatternPromptRequested())
	tr := e.start("c", "hi")
	p := decode[session.PromptRequested](t, requested.await(t, 1, nil)[0])
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	r := decode[session.PromptResolved](t, resolved.await(t, 1, nil)[0])
	assert.Equal(t, p.PromptID, r.PromptID)
	assert.Equal(t, session.PromptInterrupted, r.Status)
	res := settle(t, tr)
	assert.Equal(t, agent.StatusInterrupted, res.Status)
	var ie *agent.InterruptedError
	require.ErrorAs(t, res.Err, &ie)
	assert.Equal(t, agent.CauseUserCancel, ie.Interrupt.Cause)
	require.ErrorIs(t, tr.Reply(context.Background(), p.PromptID, agent.UserReply{}), session.ErrPromptClosed)
}

// An interrupt freezes the acknowledged prefix: the authoritative sink can
// no longer acknowledge.
// REF 2.2.16
func TestInterruptFreezesPrefix(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	e := newEnv(t, agenttest.New(agenttest.Emit("hello"), agenttest.WaitGate(g), agenttest.WaitInterrupt()))
	t.Cleanup(g.Open)
	delivered := make(chan uint64, 8)
	sink := agent.StreamSinkFunc(func(_ context.Context, env event.Envelope, d event.StreamDeltaPayload) error {
		if d.Part != nil {
			c, err := session.DeliveryCursorFromEnvelope(env)
			if err == nil {
				delivered <- c
			}
		}
		return nil
	})
	tr, err := e.open(key("c")).Session().Start(context.Background(), ask("hi"), session.SinkSpec{
		ID: "ui", Sink: sink, Visibility: session.VisibilityConfirmed,
		Authority: session.AuthorityAuthoritative, AckMode: session.AckExplicit,
	})
	require.NoError(t, err)
	reached(t, g)
	var cursor uint64
	select {
	case cursor = <-delivered:
	case <-time.After(patience):
		t.Fatal("the delta was never delivered")
	}
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	isKind(t, tr.Ack("ui", cursor), fault.Conflict)
	g.Open()
	res := settle(t, tr)
	assert.Equal(t, agent.StatusInterrupted, res.Status)
	assert.False(t, res.Committed, "nothing was acknowledged before the freeze")
}

// REF 2.2.17
func TestCancel(t *testing.T) {
	t.Parallel()
	eng := agenttest.New(agenttest.Checkpoint(), agenttest.Hang())
	e := newDurableEnv(t, resumable{Engine: eng})
	tr := e.start("c", "hi")
	eventually(t, func() bool { return len(eng.Runs()) == 1 && len(eng.Runs()[0].Checkpoints) == 1 }, "the engine checkpoints")
	tr.Cancel()
	tr.Cancel() // idempotent
	res := settle(t, tr)
	assert.Equal(t, agent.StatusCanceled, res.Status)
	assert.False(t, res.Committed)
	assert.Equal(t, session.TurnCanceled, tr.State())
	tr.Cancel()
	id, ok, err := tr.Session().Resumable(context.Background())
	require.NoError(t, err)
	assert.True(t, ok, "a canceled run is parked")
	assert.Equal(t, tr.RunID(), id)
}

// REF 2.2.18
func TestRunIDStable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New(agenttest.AskUser("q?")))
	requested := recordBus(t, e.bus, session.PatternPromptRequested())
	tr := e.start("c", "hi")
	id := tr.RunID()
	env := requested.await(t, 1, nil)[0]
	p := decode[session.PromptRequested](t, env)
	assert.Equal(t, id, p.RunID)
	assert.Equal(t, id, p.TurnID, "TurnID equals RunID in prompt payloads")
	assert.Equal(t, id, env.Header(event.HeaderRunID))
	require.NoError(t, tr.Reply(context.Background(), p.PromptID, agent.UserReply{}))
	settle(t, tr)
	assert.Equal(t, id, tr.RunID())
	assert.Equal(t, id, settle(t, tr).RunID)
}

// blockFactory makes e's host factory wait until release is closed, and
// closes entered when the first call arrives.
func blockFactory(e *env) (entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.setDecorate(func(_ session.HostRequest, h agent.Host) (agent.Host, error) {
		once.Do(func() { close(entered) })
		<-release
		return h, nil
	})
	return entered, release
}

// A Close that runs while a Start is building its turn: the turn must not
// run on the closed session.
// REF 2.8.8
func TestStartRacingClose(t *testing.T) {
	t.Parallel()
	eng := agenttest.New(agenttest.Hang())
	e := newEnv(t, eng)
	entered, release := blockFactory(e)
	s := e.open(key("c")).Session()
	started := make(chan error, 1)
	go func() {
		_, err := s.Start(context.Background(), ask("hi"))
		started <- err
	}()
	within(t, entered, "the host factory call")
	closed := make(chan struct{})
	go func() {
		_ = e.m.Close()
		close(closed)
	}()
	within(t, closed, "Close")
	close(release)
	select {
	case err := <-started:
		isKind(t, err, fault.NotAvailable)
	case <-time.After(patience):
		t.Fatal("Start did not return")
	}
	time.Sleep(10 * time.Millisecond)
	assert.Empty(t, eng.Runs(), "no engine runs after Close")
}

// A Start in flight counts as activity: Idle is false and a delete waits
// for the turn it builds.
// REF 2.8.1
// REF 2.7.4
// REF 1.9.2
func TestStartInFlightIsBusy(t *testing.T) {
	t.Parallel()
	eng := agenttest.New(agenttest.Reply("ok"))
	e := newEnv(t, eng)
	entered, release := blockFactory(e)
	s := e.open(key("c")).Session()
	started := make(chan *session.Turn, 1)
	go func() {
		tr, err := s.Start(context.Background(), ask("hi"))
		assert.NoError(t, err)
		started <- tr
	}()
	within(t, entered, "the host factory call")
	assert.False(t, e.m.Idle(), "a Start in flight is activity")
	require.ErrorIs(t, e.m.WaitIdle(expired()), context.DeadlineExceeded)
	deleted := make(chan error, 1)
	go func() { deleted <- e.m.DeleteSession(context.Background(), key("c")) }()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-deleted:
		t.Fatalf("the delete did not wait for the Start in flight: %v", err)
	default:
	}
	close(release)
	var tr *session.Turn
	select {
	case tr = <-started:
	case <-time.After(patience):
		t.Fatal("Start did not return")
	}
	require.NoError(t, <-deleted)
	assert.Equal(t, agent.StatusCompleted, settle(t, tr).Status, "the turn ran to its end before the delete closed the session")
}

// The turn's host learns when the turn was interrupted
// (HostRequest.InterruptSent), so that an engine's grace runs from the
// interrupt rather than from when its watcher woke.
// REF 5.5.5
func TestInterruptSentTellsTheHost(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	e := newEnv(t, agenttest.New(agenttest.WaitGate(g), agenttest.PollInterrupt(), agenttest.Reply("not reached")))
	t.Cleanup(g.Open)
	tr := e.start("c", "hi")
	reached(t, g)
	reqs := e.hostRequests()
	require.Len(t, reqs, 1)
	require.NotNil(t, reqs[0].InterruptSent)
	_, ok := reqs[0].InterruptSent()
	assert.False(t, ok, "not interrupted yet")

	before := time.Now()
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	after := time.Now()
	at, ok := reqs[0].InterruptSent()
	require.True(t, ok)
	assert.WithinRange(t, at, before, after)
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseCustom}))
	again, _ := reqs[0].InterruptSent()
	assert.Equal(t, at, again, "the first interrupt's time stays")
	g.Open()
	assert.Equal(t, agent.StatusInterrupted, settle(t, tr).Status)
}
