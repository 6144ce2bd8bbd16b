package local_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recurse is a step that delegates to the same agent through the host's
// service, recording the depth it ran at, until the service refuses.
func recurse(target string, mu *sync.Mutex, refusals *[]error, runs *int) agenttest.Step {
	return agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
		mu.Lock()
		*runs++
		mu.Unlock()
		svc, ok := delegation.ServiceFromHost(env.Host())
		if !ok {
			return fault.New(fault.Internal, "test", "no delegation service on the host")
		}
		_, err := svc.Delegate(ctx, ask(target, "deeper"))
		if err != nil {
			mu.Lock()
			*refusals = append(*refusals, err)
			mu.Unlock()
		}
		return nil
	})
}

// REF 6.2.3: a top-level delegation runs at depth 1 and each nested
// one a level deeper, passed down through the ctx (and, for a session
// turn, through the host the turn's ctx built); past max_depth the service
// refuses with PolicyDenied, and a depth of 0 or less is Validation.
func TestDepth(t *testing.T) {
	t.Parallel()
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "session", true: "legacy"}[legacy], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{legacy: legacy, settings: local.ServiceSettings{MaxDepth: 3}})
			var mu sync.Mutex
			var refusals []error
			runs := 0
			e.agents.put("loop", agenttest.New(recurse("loop", &mu, &refusals, &runs)))
			e.delegate(t, timeout(t), "loop", "start")
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, 3, runs, "depths 1, 2 and 3 ran")
			require.Len(t, refusals, 1)
			assert.ErrorIs(t, refusals[0], fault.PolicyDenied)
			assert.Contains(t, refusals[0].Error(), "depth 4 exceeds max_depth 3")
		})
	}
	e := newEnv(t, envConfig{})
	e.agents.put("ok", agenttest.New(agenttest.Say("hi")))
	_, err := e.svc.Delegate(delegation.ContextWithDepth(context.Background(), -1), ask("ok", "x"))
	assert.ErrorIs(t, err, fault.Validation)
	assert.Equal(t, 0, delegation.DepthFromContext(context.Background()))
	assert.Equal(t, 2, delegation.DepthFromContext(delegation.ContextWithDepth(context.Background(), 2)))
}

// REF 6.2.4: with a bound manager a delegation is a real session
// turn: key {target, ctx-<hex>}, AskUser refused with NotAvailable, an
// ephemeral session (no checkpoint is written) that is gone afterwards.
func TestSessionTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{resume: true})
	var keys []session.Key
	var mu sync.Mutex
	e.agents.put("helper", agenttest.New(
		agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
			mu.Lock()
			keys = append(keys, session.Key{AgentID: env.Run().AgentID, ContextID: env.Run().ContextID})
			mu.Unlock()
			return nil
		}),
		agenttest.Checkpoint(),
		agenttest.Say("done")))
	e.agents.put("asker", agenttest.New(agenttest.AskUser("name?")))
	ctx := timeout(t)

	resp := e.delegate(t, ctx, "helper", "go")
	assert.Equal(t, delegation.StatusSucceeded, resp.Status)
	e.delegate(t, ctx, "helper", "again")
	mu.Lock()
	require.Len(t, keys, 2)
	assert.Equal(t, "helper", keys[0].AgentID)
	assert.Regexp(t, `^ctx-[0-9a-f]{16}$`, keys[0].ContextID)
	assert.NotEqual(t, keys[0].ContextID, keys[1].ContextID, "a fresh context per delegation")
	mu.Unlock()
	ids, err := e.store.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids, "an ephemeral session writes no checkpoint and no session record")
	assert.True(t, e.m.Idle())

	resp = e.delegate(t, ctx, "asker", "go")
	assert.Equal(t, delegation.StatusFailed, resp.Status)
	require.NotNil(t, resp.Error)
	assert.ErrorIs(t, resp.Error.Err(), fault.NotAvailable, "a delegated run cannot ask the user")
}

// REF 6.2.4: when the delegation's ctx ends, the turn is cancelled
// and waited for: the run has ended by the time Delegate returns.
func TestSessionTurnCtxExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	g := agenttest.NewGate()
	eng := agenttest.New(agenttest.WaitGate(g))
	e.agents.put("slow", eng)
	ctx, cancel := context.WithCancel(timeout(t))
	go func() {
		<-g.Reached()
		cancel()
	}()
	resp := e.delegate(t, ctx, "slow", "go")
	assert.Equal(t, delegation.StatusCanceled, resp.Status)
	runs := eng.Runs()
	require.Len(t, runs, 1)
	assert.ErrorIs(t, runs[0].Err, context.Canceled, "the run ended before Delegate returned")
}

// REF 6.2.4, REF 2.4.16: the caller's sinks are inherited by
// the delegated turn downgraded to observers, so an authoritative sink
// with explicit acks still gets the sub-run's deltas without acking; a
// boundary stamping Inheritable false stops inheritance; and the same sink
// may be called from several runs at once.
func TestInheritedSinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{settings: local.ServiceSettings{MaxConcurrency: 8}})
	e.agents.put("helper", agenttest.New(agenttest.Emit("from "), agenttest.Emit("the "), agenttest.Say("helper")))
	sink := &textSink{}
	spec := session.SinkSpec{ID: "console", Sink: sink, Visibility: session.VisibilityConfirmed,
		Authority: session.AuthorityAuthoritative, AckMode: session.AckExplicit, MaxUnacked: 1}
	ctx := session.ContextWithStreamPolicy(timeout(t), session.StreamPolicy{Sinks: []session.SinkSpec{spec}, Inheritable: true})
	resp := e.delegate(t, ctx, "helper", "go")
	assert.Equal(t, delegation.StatusSucceeded, resp.Status)
	assert.Equal(t, "from the helper", sink.String())

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { e.delegate(t, ctx, "helper", "go") })
	}
	wg.Wait()
	got := sink.String()
	for _, piece := range []string{"from ", "the ", "helper"} {
		assert.Equal(t, 5, strings.Count(got, piece), "concurrent OnDelta calls from several runs: %q", got)
	}

	quiet := &textSink{}
	ctx = session.ContextWithStreamPolicy(timeout(t), session.StreamPolicy{
		Sinks: []session.SinkSpec{{ID: "quiet", Sink: quiet}}, Inheritable: false})
	e.delegate(t, ctx, "helper", "go")
	assert.Empty(t, quiet.String())
}

// REF 2.3.12: a sub-run with its own turn has its own steer queue;
// the caller's queue (on the caller's host) is never drained by it.
func TestSessionTurnSteer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	eng := agenttest.New(agenttest.DrainSteer(), agenttest.Say("ok"))
	e.agents.put("helper", eng)
	caller := agenttest.NewHost()
	caller.Steer(message.NewTextMessage(message.RoleUser, "for the caller"))
	e.delegate(t, agent.ContextWithHost(timeout(t), caller), "helper", "go")
	require.Len(t, eng.Runs(), 1)
	assert.Empty(t, eng.Runs()[0].Steered)
	assert.Len(t, caller.DrainSteer(), 1, "the caller's message is still queued")
}

// REF 6.2.8: an agent the session manager resolves but the
// directory does not list (one registered while the runtime runs) is a
// target too.
func TestTargetFromManager(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	dynamic := newAgents()
	dynamic.put("late", agenttest.New(agenttest.Say("registered late")))
	both := &unionSource{a: e.agents, b: dynamic}
	m, err := session.NewManager(session.Deps{Resolver: both, HostFactory: e.factory(), Bus: e.bus})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, e.svc.BindSessionManager(m))
	resp := e.delegate(t, timeout(t), "late", "go")
	assert.Equal(t, "registered late", agenttest.ReplyText(resp.Output))
	_, err = e.svc.Delegate(timeout(t), ask("nobody", "go"))
	assert.ErrorIs(t, err, fault.NotFound)
}

// unionSource resolves from a, then b.
type unionSource struct{ a, b *agents }

func (u *unionSource) Agent(id string) (*agent.Agent, bool) {
	if ag, ok := u.a.Agent(id); ok {
		return ag, true
	}
	return u.b.Agent(id)
}
