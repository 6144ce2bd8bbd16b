package session_test

import (
	"context"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 2.2.1
func TestStartConfig(t *testing.T) {
	t.Parallel()
	t.Run("sinks", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, agenttest.New(agenttest.Say("hello")))
		var a, b textSink
		tr, err := e.open(key("c")).Session().Start(context.Background(), ask("hi"),
			session.SinkSpec{ID: "a", Sink: &a}, session.SinkSpec{ID: "b", Sink: &b})
		require.NoError(t, err)
		settle(t, tr)
		assert.Equal(t, []string{"hello"}, a.text())
		assert.Equal(t, []string{"hello"}, b.text())
		var c textSink
		settle(t, e.startConfig("c", "again", session.StartConfig{Sinks: []session.SinkSpec{session.SinkSpec{ID: "c", Sink: &c}}}))
		assert.Equal(t, []string{"hello"}, c.text())
	})
	t.Run("ask-user override", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, agenttest.New(agenttest.AskUser("name?")))
		prompts := recordBus(t, e.bus, "agent.run.*.prompt.>")
		var asked []agent.UserPrompt
		override := func(_ context.Context, p agent.UserPrompt) (agent.UserReply, error) {
			asked = append(asked, p)
			return agent.UserReply{Parts: []message.Part{message.TextPart("ann")}}, nil
		}
		tr := e.startConfig("c", "hi", session.StartConfig{AskUser: override})
		res := settle(t, tr)
		assert.Equal(t, "ann", res.LastBoard.Vars[agenttest.VarReply])
		require.Len(t, asked, 1)
		assert.Equal(t, "name?", message.Message{Parts: asked[0].Parts}.Text())
		// The run's own start and end went through the bus; no prompt event did.
		time.Sleep(20 * time.Millisecond)
		assert.Empty(t, prompts.all(), "the override publishes nothing")
	})
	t.Run("ephemeral", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, agenttest.New())
		l := e.open(key("c"))
		assert.False(t, l.Session().Ephemeral())
		settle(t, e.startConfig("c", "hi", session.StartConfig{Ephemeral: true}))
		assert.True(t, l.Session().Ephemeral())
	})
}

// REF 2.2.2
func TestStartChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New())
	s := e.open(key("c")).Session()
	_, err := s.Start(nil, ask("hi")) //nolint:staticcheck // nil ctx on purpose
	isKind(t, err, fault.Validation)
	_, err = s.Start(context.Background(), ask("hi"), session.SinkSpec{ID: "", Sink: &textSink{}})
	isKind(t, err, fault.Validation)
	_, err = s.Start(context.Background(), ask("hi"), session.SinkSpec{ID: "x"})
	isKind(t, err, fault.Validation)
	_, err = s.StartWithConfig(context.Background(), ask("hi"), session.StartConfig{Sinks: []session.SinkSpec{{ID: "x"}}})
	isKind(t, err, fault.Validation)
	_, err = s.Start(context.Background(), agent.Request{Message: message.Message{Role: "robot", Parts: []message.Part{message.TextPart("x")}}})
	isKind(t, err, fault.Validation)
	assert.Nil(t, s.Turn(), "a refused Start leaves no turn")
	assert.Empty(t, e.hostRequests(), "a refused Start builds no host")

	// A refused Start does not interrupt the active turn.
	g := agenttest.NewGate()
	e2 := newEnv(t, agenttest.New(agenttest.WaitGate(g)))
	t.Cleanup(g.Open)
	active := e2.start("c", "hi")
	reached(t, g)
	_, err = active.Session().Start(context.Background(), ask("hi"), session.SinkSpec{ID: "x"})
	isKind(t, err, fault.Validation)
	_, err = active.Session().Start(context.Background(), agent.Request{Message: message.Message{Role: message.RoleUser}})
	isKind(t, err, fault.Validation)
	assert.Equal(t, session.TurnRunning, active.State())
	g.Open()
	settle(t, active)

	// A request without a message is allowed, as agent.Execute allows it.
	tr, err := s.Start(context.Background(), agent.Request{})
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, settle(t, tr).Status)
}

// Starts on one session are serialized: each interrupts the one before,
// and at most one engine run is active at any time.
// REF 2.2.2
func TestStartSerialized(t *testing.T) {
	t.Parallel()
	var active, most atomic.Int64
	var mu sync.Mutex
	var causes []agent.InterruptCause
	eng := agenttest.New(agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
		n := active.Add(1)
		defer active.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case intr := <-env.Host().Interrupts():
			mu.Lock()
			causes = append(causes, intr.Cause)
			mu.Unlock()
			return agent.Interrupted(intr)
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	e := newEnv(t, eng)
	s := e.open(key("c")).Session()
	var wg sync.WaitGroup
	var turns []*session.Turn
	for range 8 {
		wg.Go(func() {
			tr, err := s.Start(context.Background(), ask("hi"))
			if assert.NoError(t, err) {
				mu.Lock()
				turns = append(turns, tr)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.NoError(t, s.Turn().Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
	for _, tr := range turns {
		settle(t, tr)
	}
	assert.Equal(t, int64(1), most.Load(), "one engine run at a time")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, causes, len(turns))
	for i, c := range causes[:len(causes)-1] {
		assert.Equal(t, agent.CauseUserInput, c, "run %d was interrupted by the next Start", i)
	}
}

// REF 2.2.3
func TestEphemeralFixedByFirstStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New())
	settle(t, e.startConfig("eph", "hi", session.StartConfig{Ephemeral: true}))
	_, err := e.open(key("eph")).Session().Start(context.Background(), ask("again"))
	isKind(t, err, fault.Validation)
	settle(t, e.startConfig("eph", "again", session.StartConfig{Ephemeral: true}))

	settle(t, e.start("durable", "hi"))
	_, err = e.open(key("durable")).Session().StartWithConfig(context.Background(), ask("again"), session.StartConfig{Ephemeral: true})
	isKind(t, err, fault.Validation)
	assert.False(t, e.open(key("durable")).Session().Ephemeral())
}

// REF 2.2.4
func TestStartDuringDrain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New())
	s := e.open(key("c")).Session()
	require.NoError(t, e.m.Drain(context.Background()))
	_, err := s.Start(context.Background(), ask("hi"))
	require.ErrorIs(t, err, session.ErrManagerDraining)
	isKind(t, err, fault.NotAvailable)
}

// REF 2.2.6
func TestStartInterruptsActiveTurn(t *testing.T) {
	t.Parallel()
	eng := agenttest.NewScript(func(call int, _ agent.Run) []agenttest.Step {
		if call == 1 {
			return []agenttest.Step{agenttest.WaitInterrupt()}
		}
		return []agenttest.Step{agenttest.Reply("second")}
	})
	e := newEnv(t, eng)
	first := e.start("c", "one")
	eventually(t, func() bool { return len(eng.Runs()) == 1 }, "the first run starts")
	second := e.start("c", "two")
	// Start returned only after the first turn finished.
	select {
	case <-first.Done():
	default:
		t.Fatal("Start returned before the active turn finished")
	}
	res := settle(t, first)
	assert.Equal(t, agent.StatusInterrupted, res.Status)
	assert.Equal(t, agent.CauseUserInput, eng.Runs()[0].Interrupts[0].Cause)
	assert.Equal(t, "second", agenttest.ReplyText(settle(t, second).Output))
}

// The wait for the active turn is bounded by the Start's ctx; the active
// turn is left running.
// REF 2.2.6
func TestStartWaitBoundedByCtx(t *testing.T) {
	t.Parallel()
	e, g := gatedEnv(t)
	first := e.start("c", "one")
	reached(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := first.Session().Start(ctx, ask("two"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Same(t, first, first.Session().Turn())
	assert.Equal(t, session.TurnInterrupting, first.State())
	g.Open()
	settle(t, first)
}

// REF 2.2.7
func TestRunIDAndRequestRewrite(t *testing.T) {
	t.Parallel()
	eng := agenttest.New()
	e := newEnv(t, eng)
	req := agent.Request{RunID: "mine", ContextID: "elsewhere", Message: userMsg("hi"), Metadata: map[string]string{"k": "v"}}
	tr, err := e.open(key("c")).Session().Start(context.Background(), req)
	require.NoError(t, err)
	settle(t, tr)
	assert.Regexp(t, regexp.MustCompile(`^run-[0-9a-f]{16}$`), tr.RunID())
	run := eng.Runs()[0].Run
	assert.Equal(t, tr.RunID(), run.ID)
	assert.Equal(t, "c", run.ContextID)
	assert.Equal(t, "mine", req.RunID, "the caller's request is not changed")
	assert.Equal(t, "elsewhere", req.ContextID)
	other := e.start("c", "again")
	assert.NotEqual(t, tr.RunID(), other.RunID())
	settle(t, other)
}

// REF 2.2.9
func TestStartVanishedAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New())
	s := e.open(key("c")).Session()
	e.agents.drop(botID)
	_, err := s.Start(context.Background(), ask("hi"))
	isKind(t, err, fault.NotFound)
	assert.Nil(t, s.Turn())
	assert.True(t, e.m.Idle())
}

// The per-session catalog is built the first time the session starts a
// turn in each epoch, and engines reach it through the host.
// REF 2.2.9
func TestStartCatalogPerEpoch(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	provider := func(_ context.Context, k session.Key) (any, error) {
		return k.ContextID + "#" + string(rune('0'+calls.Add(1))), nil
	}
	var seen []any
	var mu sync.Mutex
	eng := agenttest.New(agenttest.Func(func(_ context.Context, env *agenttest.Env) error {
		c, ok := agent.CapabilityFromHost[session.CatalogHost](env.Host())
		require.True(t, ok)
		mu.Lock()
		seen = append(seen, c.SessionCatalog())
		mu.Unlock()
		return nil
	}))
	e := newCatalogEnv(t, eng, provider)
	settle(t, e.start("c", "one"))
	settle(t, e.start("c", "two"))
	assert.Equal(t, int64(1), calls.Load())
	deps := e.m.Deps()
	require.NoError(t, e.m.SwapDeps(deps, nil))
	settle(t, e.start("c", "three"))
	assert.Equal(t, int64(2), calls.Load())
	mu.Lock()
	assert.Equal(t, []any{"c#1", "c#1", "c#2"}, seen)
	mu.Unlock()

	failing := newCatalogEnv(t, eng, func(context.Context, session.Key) (any, error) {
		return nil, fault.New(fault.NotAvailable, "catalog", "down")
	})
	_, err := failing.open(key("c")).Session().Start(context.Background(), ask("hi"))
	isKind(t, err, fault.NotAvailable)
}

// REF 2.2.10
func TestHostRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New(agenttest.AskUser("q?")))
	var asked atomic.Bool
	tr := e.startConfig("c", "hi", session.StartConfig{AskUser: func(context.Context, agent.UserPrompt) (agent.UserReply, error) {
		asked.Store(true)
		return agent.UserReply{}, nil
	}})
	settle(t, tr)
	reqs := e.hostRequests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.NoError(t, r.Validate())
	assert.Equal(t, key("c"), r.Key)
	assert.Equal(t, tr.RunID(), r.RunID)
	assert.NotNil(t, r.Interrupts)
	require.NotNil(t, r.AskUser)
	assert.True(t, asked.Load(), "the request's AskUser is the turn's")

	for _, field := range []string{"key", "run id", "interrupts", "ask user"} {
		bad := r
		switch field {
		case "key":
			bad.Key = session.Key{}
		case "run id":
			bad.RunID = ""
		case "interrupts":
			bad.Interrupts = nil
		case "ask user":
			bad.AskUser = nil
		}
		isKind(t, bad.Validate(), fault.Validation)
	}
}

// REF 2.2.10
func TestHostFactoryFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		make func(agent.Host) (agent.Host, error)
		kind *fault.Kind
	}{
		{"nil host", func(agent.Host) (agent.Host, error) { return nil, nil }, fault.Internal},
		{"typed nil host", func(agent.Host) (agent.Host, error) { return (*testHost)(nil), nil }, fault.Internal},
		{"factory error", func(agent.Host) (agent.Host, error) {
			return nil, fault.New(fault.NotAvailable, "host", "no host today")
		}, fault.NotAvailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, agenttest.New())
			e.setDecorate(func(_ session.HostRequest, h agent.Host) (agent.Host, error) { return tc.make(h) })
			s := e.open(key("c")).Session()
			_, err := s.Start(context.Background(), ask("hi"))
			isKind(t, err, tc.kind)
			assert.Nil(t, s.Turn())
			assert.True(t, e.m.Idle())
			e.setDecorate(nil)
			settle(t, e.start("c", "retry"))
		})
	}
}

// A factory product that already offers agent.SteerSource, itself or
// through a decorator it wraps, is a Conflict.
// REF 2.2.11
// REF 1.12.5
func TestSteerSourceProductConflict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		make func(agent.Host) agent.Host
	}{
		{"product is a steer source", func(agent.Host) agent.Host { return agenttest.NewHost() }},
		{"product wraps a steer source", func(agent.Host) agent.Host { return &agent.HostFuncs{Inner: agenttest.NewHost()} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eng := agenttest.New()
			e := newEnv(t, eng)
			e.setDecorate(func(_ session.HostRequest, h agent.Host) (agent.Host, error) { return tc.make(h), nil })
			_, err := e.open(key("c")).Session().Start(context.Background(), ask("hi"))
			isKind(t, err, fault.Conflict)
			assert.Empty(t, eng.Runs(), "the engine never ran")
			assert.True(t, e.m.Idle())
		})
	}
}

// REF 1.12.5
func TestHostWrappingOrder(t *testing.T) {
	t.Parallel()
	for _, ephemeral := range []bool{false, true} {
		t.Run(map[bool]string{false: "durable", true: "ephemeral"}[ephemeral], func(t *testing.T) {
			t.Parallel()
			var chain []agent.Host
			var steerOK, busOK bool
			eng := agenttest.New(agenttest.Func(func(_ context.Context, env *agenttest.Env) error {
				for h := env.Host(); h != nil; {
					chain = append(chain, h)
					u, ok := h.(agent.HostUnwrapper)
					if !ok {
						break
					}
					h = u.UnwrapHost()
				}
				_, steerOK = agent.SteerFromHost(env.Host())
				_, busOK = agent.EventBusFromHost(env.Host())
				return nil
			}))
			e := newDurableEnv(t, eng)
			settle(t, e.startConfig("c", "hi", session.StartConfig{Ephemeral: ephemeral}))
			product := e.lastProduct()
			require.NotNil(t, product)
			// chain[0] is agent.Execute's usage meter; the session's
			// wrappers follow; the factory product is innermost.
			require.GreaterOrEqual(t, len(chain), 3)
			assert.Same(t, product, chain[len(chain)-1], "the factory product is innermost")
			for _, h := range chain[:len(chain)-1] {
				assert.NotSame(t, product, h)
			}
			outer := chain[1]
			_, isSteer := outer.(agent.SteerSource)
			assert.True(t, isSteer, "the steer-source wrapper is outermost of the session's wrappers")
			assert.True(t, steerOK, "SteerFromHost works through the wrappers")
			assert.True(t, busOK, "the product's capabilities stay reachable")
			if !ephemeral {
				assert.Len(t, chain, 3)
				return
			}
			require.Len(t, chain, 4)
			mid := chain[2]
			_, midSteer := mid.(agent.SteerSource)
			assert.False(t, midSteer, "the ephemeral wrapper sits inside the steer wrapper")
			cp := agent.Checkpoint{ExecID: "run-0000000000000001", Board: agent.NewBoard()}
			require.NoError(t, mid.Checkpoint(context.Background(), cp))
			assert.Empty(t, e.storeIDs(), "the ephemeral wrapper drops checkpoints")
			require.NoError(t, product.Checkpoint(context.Background(), cp))
			assert.Equal(t, []string{cp.ExecID}, e.storeIDs(), "the product itself saves")
		})
	}
}

// Sinks and the stream coordinator are attached before the engine runs,
// so a sink sees the run's very first event.
// REF 2.2.12
func TestSinksAttachedBeforeEngine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New(agenttest.Say("first")))
	var sink textSink
	tr, err := e.open(key("c")).Session().Start(context.Background(), ask("hi"), session.SinkSpec{ID: "s", Sink: &sink})
	require.NoError(t, err)
	settle(t, tr)
	subjects := sink.subjects()
	require.NotEmpty(t, subjects)
	assert.Equal(t, event.SubjectRunStart(tr.RunID()), subjects[0], "the run start is delivered")
	assert.Equal(t, []string{"first"}, sink.text())
	assert.Equal(t, event.SubjectRunEnd(tr.RunID()), subjects[len(subjects)-1])
}

// REF 2.2.13
func TestStartRunsAsynchronously(t *testing.T) {
	t.Parallel()
	e, g := gatedEnv(t)
	var state session.TurnState
	e2, g2 := gatedEnvConfig(t, session.Config{Observers: []session.SessionObserver{session.ObserverFuncs{
		Started: func(_ *session.Session, tr *session.Turn) { state = tr.State() },
	}}})
	tr := e.start("c", "hi")
	assert.Equal(t, session.TurnRunning, tr.State(), "Start returns while the engine runs")
	reached(t, g)
	tr2 := e2.start("c", "hi")
	assert.Equal(t, session.TurnRunning, state)
	g.Open()
	g2.Open()
	settle(t, tr)
	settle(t, tr2)
}
