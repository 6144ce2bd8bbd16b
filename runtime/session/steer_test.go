package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sizedMsg returns a user message whose JSON encoding is exactly n bytes.
func sizedMsg(t testing.TB, n int) message.Message {
	t.Helper()
	b, err := json.Marshal(userMsg("a"))
	require.NoError(t, err)
	m := userMsg(strings.Repeat("a", n-len(b)+1))
	b, err = json.Marshal(m)
	require.NoError(t, err)
	require.Equal(t, n, len(b))
	return m
}

// steerEnv runs turns that park at a gate and then drain the steer queue.
func steerEnv(t *testing.T) (*env, *agenttest.Engine, *agenttest.Gate) {
	t.Helper()
	g := agenttest.NewGate()
	eng := agenttest.New(agenttest.WaitGate(g), agenttest.DrainSteer())
	e := newEnv(t, eng)
	t.Cleanup(g.Open)
	return e, eng, g
}

// The checks run in the order of the list; each row sets up the failures
// of every later check too.
// REF 2.3.2
func TestSteerCheckOrder(t *testing.T) {
	t.Parallel()
	invalid := message.Message{Role: "robot"}
	big := sizedMsg(t, session.MaxSteerMessageBytes+1)

	// A terminal turn that was interrupted with a full queue.
	closedFull := func(t *testing.T) *session.Turn {
		e, _, g := steerEnv(t)
		tr := e.start("c", "hi")
		fill(t, tr)
		require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
		g.Open()
		settle(t, tr)
		return tr
	}
	// A running turn with an interrupt requested and a full queue.
	interruptedFull := func(t *testing.T) *session.Turn {
		e, _, g := steerEnv(t)
		tr := e.start("c", "hi")
		reached(t, g)
		fill(t, tr)
		require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserInput, Detail: "new message"}))
		return tr
	}
	full := func(t *testing.T) *session.Turn {
		e, _, g := steerEnv(t)
		tr := e.start("c", "hi")
		reached(t, g)
		fill(t, tr)
		return tr
	}
	for _, tc := range []struct {
		name  string
		turn  func(t *testing.T) *session.Turn
		msg   message.Message
		check func(t *testing.T, err error)
	}{
		{"1 invalid before oversized", closedFull, message.Message{Role: "robot", Parts: big.Parts},
			func(t *testing.T, err error) { isKind(t, err, fault.Validation) }},
		{"1 invalid before closed", closedFull, invalid,
			func(t *testing.T, err error) { isKind(t, err, fault.Validation) }},
		{"2 oversized before closed", closedFull, big, func(t *testing.T, err error) {
			require.ErrorIs(t, err, session.ErrSteerTooLarge)
			isKind(t, err, fault.BudgetExceeded)
		}},
		{"3 closed before interrupted and full", closedFull, userMsg("x"), func(t *testing.T, err error) {
			require.ErrorIs(t, err, session.ErrSteerClosed)
			isKind(t, err, fault.NotAvailable)
		}},
		{"4 interrupted before full", interruptedFull, userMsg("x"), func(t *testing.T, err error) {
			isKind(t, err, fault.Interrupted)
			var ie *agent.InterruptedError
			require.True(t, errors.As(err, &ie))
			assert.Equal(t, agent.Interrupt{Cause: agent.CauseUserInput, Detail: "new message"}, ie.Interrupt)
		}},
		{"5 full", full, userMsg("x"), func(t *testing.T, err error) {
			require.ErrorIs(t, err, session.ErrSteerQueueFull)
			isKind(t, err, fault.RateLimit)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, tc.turn(t).Steer(tc.msg))
		})
	}
}

func fill(t *testing.T, tr *session.Turn) {
	t.Helper()
	for i := range session.MaxSteerQueue {
		require.NoError(t, tr.Steer(userMsg(fmt.Sprintf("m%d", i))))
	}
	require.Equal(t, session.MaxSteerQueue, tr.PendingSteer())
}

// A message of exactly 32768 bytes is accepted; one byte more is not.
// REF 2.3.2
func TestSteerSizeBoundary(t *testing.T) {
	t.Parallel()
	e, eng, g := steerEnv(t)
	tr := e.start("c", "hi")
	require.NoError(t, tr.Steer(sizedMsg(t, session.MaxSteerMessageBytes)))
	require.ErrorIs(t, tr.Steer(sizedMsg(t, session.MaxSteerMessageBytes+1)), session.ErrSteerTooLarge)
	g.Open()
	settle(t, tr)
	require.Len(t, eng.Runs()[0].Steered, 1)
}

// The queue belongs to the turn: another turn, of the same session or of
// another session built by the same factory, never sees it.
// REF 2.3.1
func TestSteerQueueBelongsToTurn(t *testing.T) {
	t.Parallel()
	e, eng, g := steerEnv(t)
	a := e.start("a", "hi")
	b := e.start("b", "hi")
	require.NoError(t, a.Steer(userMsg("for a")))
	assert.Zero(t, b.PendingSteer())
	g.Open()
	settle(t, a)
	settle(t, b)
	next := e.start("a", "again")
	assert.Zero(t, next.PendingSteer(), "a new turn starts with an empty queue")
	settle(t, next)
	byRun := map[string][]string{}
	for _, r := range eng.Runs() {
		for _, m := range r.Steered {
			byRun[r.Run.ID] = append(byRun[r.Run.ID], m.Text())
		}
	}
	assert.Equal(t, map[string][]string{a.RunID(): {"for a"}}, byRun)
}

// REF 2.3.3
func TestSteerDeepCopy(t *testing.T) {
	t.Parallel()
	e, _, _ := steerEnv(t)
	tr := e.start("c", "hi")
	msg := userMsg("original")
	msg.Metadata = map[string]string{"k": "v"}
	require.NoError(t, tr.Steer(msg))
	msg.Parts[0].Text = "changed"
	msg.Metadata["k"] = "changed"
	got := tr.DrainSteer()
	require.Len(t, got, 1)
	assert.Equal(t, "original", got[0].Text())
	assert.Equal(t, "v", got[0].Metadata["k"])
}

// REF 2.3.4
func TestDrainSteer(t *testing.T) {
	t.Parallel()
	e, _, g := steerEnv(t)
	tr := e.start("c", "hi")
	assert.Nil(t, tr.DrainSteer(), "nil when empty")
	require.NoError(t, tr.Steer(userMsg("1")))
	require.NoError(t, tr.Steer(userMsg("2")))
	got := tr.DrainSteer()
	require.Len(t, got, 2)
	assert.Equal(t, "1", got[0].Text(), "arrival order")
	assert.Equal(t, "2", got[1].Text())
	got[0].Parts[0].Text = "mutated"
	assert.Nil(t, tr.DrainSteer(), "destructive: never returned twice")

	// Concurrent drains share the messages: none is lost or duplicated.
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				for _, m := range tr.DrainSteer() {
					mu.Lock()
					seen[m.Text()]++
					mu.Unlock()
				}
			}
		})
	}
	sent := 0
	for i := range 64 {
		if tr.Steer(userMsg(fmt.Sprint(i))) == nil {
			sent++
		}
	}
	wg.Wait()
	for _, m := range tr.DrainSteer() {
		seen[m.Text()]++
	}
	assert.Len(t, seen, sent)
	for text, n := range seen {
		assert.Equal(t, 1, n, "message %s drained %d times", text, n)
	}

	// Still callable after the turn ended, to recover undelivered messages.
	require.NoError(t, tr.Steer(userMsg("late")))
	g.Open()
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	settle(t, tr)
	assert.Nil(t, tr.DrainSteer(), "the engine drained it")
}

// REF 2.3.5
func TestPendingSteer(t *testing.T) {
	t.Parallel()
	e, _, _ := steerEnv(t)
	tr := e.start("c", "hi")
	assert.Zero(t, tr.PendingSteer())
	for i := 1; i <= 3; i++ {
		require.NoError(t, tr.Steer(userMsg("m")))
		assert.Equal(t, i, tr.PendingSteer())
	}
	tr.DrainSteer()
	assert.Zero(t, tr.PendingSteer())
}

// REF 2.3.6
func TestPendingSteerOnResult(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	e := newEnv(t, agenttest.New(agenttest.WaitGate(g)))
	t.Cleanup(g.Open)
	tr := e.start("c", "hi")
	for _, text := range []string{"a", "b", "c"} {
		require.NoError(t, tr.Steer(userMsg(text)))
	}
	g.Open()
	res := settle(t, tr)
	n, ok := res.State[session.StatePendingSteer].(int)
	require.True(t, ok, "an int in process, got %T", res.State[session.StatePendingSteer])
	assert.Equal(t, 3, n)

	b, err := json.Marshal(res)
	require.NoError(t, err)
	var back struct {
		State map[string]any `json:"state"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&back))
	num, ok := back.State[session.StatePendingSteer].(json.Number)
	require.True(t, ok, "a JSON number after a round trip")
	assert.Equal(t, "3", num.String())

	left := tr.DrainSteer()
	require.Len(t, left, 3, "the queued messages remain available")
	assert.Equal(t, "a", left[0].Text())

	quiet := settle(t, e.start("d", "hi"))
	assert.NotContains(t, quiet.State, session.StatePendingSteer, "no key when the queue is empty")
}

// The count is only on the result, never on the event stream.
// REF 2.3.7
func TestPendingSteerNeverOnStream(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	e := newEnv(t, agenttest.New(agenttest.Say("hello"), agenttest.WaitGate(g)))
	t.Cleanup(g.Open)
	all := recordBus(t, e.bus, "agent.run.>")
	var sink textSink
	tr, err := e.open(key("c")).Session().Start(context.Background(), ask("hi"), session.SinkSpec{ID: "s", Sink: &sink})
	require.NoError(t, err)
	require.NoError(t, tr.Steer(userMsg("pending")))
	g.Open()
	res := settle(t, tr)
	require.Equal(t, 1, res.State[session.StatePendingSteer])
	envs := all.await(t, 3, nil)
	sink.mu.Lock()
	envs = append(envs, sink.envs...)
	sink.mu.Unlock()
	require.NotEmpty(t, envs)
	for _, env := range envs {
		assert.NotContains(t, string(env.Payload), "pending_steer", env.Subject)
		for k, v := range env.Headers {
			assert.NotContains(t, k+v, "pending_steer", env.Subject)
		}
	}
}

// Draining is not delivery: a message drained and dropped is gone.
// REF 2.3.8
func TestSteerDrainIsNotDelivery(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	var dropped []message.Message
	eng := agenttest.New(agenttest.WaitGate(g), agenttest.Func(func(_ context.Context, env *agenttest.Env) error {
		src, ok := agent.SteerFromHost(env.Host())
		require.True(t, ok)
		dropped = src.DrainSteer() // drained, never put on the board
		return nil
	}))
	e := newEnv(t, eng)
	t.Cleanup(g.Open)
	tr := e.start("c", "hi")
	require.NoError(t, tr.Steer(userMsg("lost")))
	g.Open()
	res := settle(t, tr)
	require.Len(t, dropped, 1)
	assert.NotContains(t, res.State, session.StatePendingSteer)
	assert.Nil(t, tr.DrainSteer())
	for _, m := range res.LastBoard.Channel(agent.MainChannel) {
		assert.NotEqual(t, "lost", m.Text())
	}
}

// A resumed run starts with an empty queue.
// REF 2.3.9
func TestSteerQueueNotPersisted(t *testing.T) {
	t.Parallel()
	eng := agenttest.New(agenttest.WaitInterrupt(), agenttest.DrainSteer())
	e := newDurableEnv(t, resumable{Engine: eng})
	tr := e.start("c", "hi")
	eventually(t, func() bool { return len(eng.Runs()) == 1 }, "the engine runs")
	require.NoError(t, tr.Steer(userMsg("queued")))
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	res := settle(t, tr)
	require.Equal(t, agent.StatusInterrupted, res.Status)
	require.Equal(t, 1, res.State[session.StatePendingSteer])

	resumed, err := tr.Session().Resume(context.Background())
	require.NoError(t, err)
	assert.Equal(t, tr.RunID(), resumed.RunID())
	assert.Zero(t, resumed.PendingSteer())
	settle(t, resumed)
	runs := eng.Runs()
	require.Len(t, runs, 2)
	assert.True(t, runs[1].Resumed)
	assert.Empty(t, runs[1].Steered, "the resumed run drained nothing")
}

// The queue is the agent.SteerSource capability of the host the engine
// gets, found through every wrapper with SteerFromHost.
// REF 2.3.10
// REF 6.1.3
// REF 6.1.4
func TestSteerFromHostThroughWrappers(t *testing.T) {
	t.Parallel()
	e, eng, g := steerEnv(t)
	// The application decorates the base host the usual way; the steer
	// source is still found from the engine's host.
	e.setDecorate(func(_ session.HostRequest, h agent.Host) (agent.Host, error) {
		return &agent.HostFuncs{Inner: h}, nil
	})
	tr := e.start("c", "hi")
	require.NoError(t, tr.Steer(userMsg("turn left")))
	require.NoError(t, tr.Steer(userMsg("now right")))
	g.Open()
	res := settle(t, tr)
	steered := eng.Runs()[0].Steered
	require.Len(t, steered, 2)
	assert.Equal(t, "turn left", steered[0].Text())
	assert.Equal(t, "now right", steered[1].Text())
	assert.Equal(t, []string{"hi", "turn left", "now right"}, texts(res.LastBoard.Channel(agent.MainChannel)))
	assert.NotContains(t, res.State, session.StatePendingSteer)

}

func texts(msgs []message.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}

// Core never turns steered text into stream deltas.
// REF 2.3.11
func TestSteerNeverInjectedIntoStream(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	e := newEnv(t, agenttest.New(agenttest.WaitGate(g), agenttest.DrainSteer(), agenttest.Say("answer")))
	t.Cleanup(g.Open)
	var sink textSink
	tr, err := e.open(key("c")).Session().Start(context.Background(), ask("hi"), session.SinkSpec{ID: "s", Sink: &sink})
	require.NoError(t, err)
	require.NoError(t, tr.Steer(userMsg("steered text")))
	g.Open()
	settle(t, tr)
	assert.Equal(t, []string{"answer"}, sink.text())
}

// hidingHost is a decorator that stops capability searches: what a
// delegation service hands a child run in legacy mode.
type hidingHost struct{ agent.Host }

func (hidingHost) UnwrapHost() agent.Host { return nil }

// A delegated sub-run with its own turn has its own queue, steerable only
// through that turn; a decorator that hides the parent's host hides its
// queue too. (The delegation service's own rules are tested with it.)
// REF 2.3.12
func TestSteerDelegatedSubRun(t *testing.T) {
	t.Parallel()
	childGate := agenttest.NewGate()
	childEng := agenttest.New(agenttest.WaitGate(childGate), agenttest.DrainSteer())
	children := make(chan *session.Turn, 1)
	var hiddenOK bool
	var m *session.Manager
	parentEng := agenttest.New(agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
		_, hiddenOK = agent.SteerFromHost(hidingHost{env.Host()})
		l, err := m.Open(ctx, session.Key{AgentID: "child", ContextID: "sub-" + env.Run().ID})
		if err != nil {
			return err
		}
		defer l.Close()
		child, err := l.Session().Start(ctx, ask("sub task"))
		if err != nil {
			return err
		}
		children <- child
		_, err = child.Wait(ctx)
		return err
	}), agenttest.DrainSteer())
	e := newEnv(t, parentEng)
	t.Cleanup(childGate.Open)
	e.agents.put("child", childEng)
	m = e.m
	parent := e.start("c", "delegate")
	var child *session.Turn
	select {
	case child = <-children:
	case <-time.After(patience):
		t.Fatal("the sub-run never started")
	}
	reached(t, childGate)
	require.NoError(t, parent.Steer(userMsg("for the parent")))
	require.NoError(t, child.Steer(userMsg("for the child")))
	assert.Equal(t, 1, parent.PendingSteer())
	assert.Equal(t, 1, child.PendingSteer())
	childGate.Open()
	settle(t, child)
	settle(t, parent)
	assert.Equal(t, []string{"for the child"}, texts(childEng.Runs()[0].Steered))
	assert.Equal(t, []string{"for the parent"}, texts(parentEng.Runs()[0].Steered))
	assert.False(t, hiddenOK, "a hiding decorator hides the turn's queue")
}

// StartConfig.Steer queues messages before the run starts, as Turn.Steer
// would, and refuses what Turn.Steer refuses: an invalid message, more than
// MaxSteerQueue.
func TestStartConfigSteer(t *testing.T) {
	t.Parallel()
	e, _, g := steerEnv(t)
	tr := e.startConfig("c", "hi", session.StartConfig{Steer: []message.Message{userMsg("early"), userMsg("too")}})
	assert.Equal(t, 2, tr.PendingSteer(), "queued before the run drains")
	g.Open()
	res := settle(t, tr)
	require.NotNil(t, res)
	assert.Equal(t, 0, tr.PendingSteer(), "the run drained them")

	s := e.open(key("d")).Session()
	_, err := s.StartWithConfig(context.Background(), ask("hi"),
		session.StartConfig{Steer: make([]message.Message, session.MaxSteerQueue+1)})
	assert.ErrorIs(t, err, session.ErrSteerQueueFull)
	_, err = s.StartWithConfig(context.Background(), ask("hi"),
		session.StartConfig{Steer: []message.Message{{Role: "robot"}}})
	assert.True(t, fault.Is(err, fault.Validation), "%v", err)
}
