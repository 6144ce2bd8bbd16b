package local_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 6.2.6, REF 2.3.12: without a session manager a sync
// delegation runs with agent.Execute under the caller's host, with the
// caller's steer source withheld: the child can ask the caller's user,
// but a steer step drains nothing and the caller's queue stays intact.
func TestLegacySync(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{legacy: true})
	eng := agenttest.New(agenttest.DrainSteer(), agenttest.AskUser("name?"), agenttest.Say("done"))
	e.agents.put("helper", eng)
	caller := agenttest.NewHost()
	caller.Steer(message.NewTextMessage(message.RoleUser, "for the caller"))
	caller.SetAskUser(func(context.Context, agent.UserPrompt) (agent.UserReply, error) {
		return agent.UserReply{Parts: []message.Part{message.TextPart("Ada")}}, nil
	})
	resp := e.delegate(t, agent.ContextWithHost(timeout(t), caller), "helper", "go")
	require.Equal(t, delegation.StatusSucceeded, resp.Status, "%+v", resp.Error)
	runs := eng.Runs()
	require.Len(t, runs, 1)
	assert.Empty(t, runs[0].Steered, "the child cannot drain the caller's queue")
	require.Len(t, runs[0].Replies, 1, "the child asked the caller's user")
	assert.Equal(t, "Ada", runs[0].Replies[0].Parts[0].Text)
	assert.Len(t, caller.DrainSteer(), 1)
	assert.NotEmpty(t, caller.Subjects(), "the child published through the caller's host")
}

// REF 2.3.12: the withheld steer source is not found by any search,
// while the host's other capabilities stay reachable.
func TestWithoutSteer(t *testing.T) {
	t.Parallel()
	bus := event.NewMemoryBus()
	t.Cleanup(func() { _ = bus.Close() })
	inner := &busHost{HostFuncs: &agent.HostFuncs{Inner: agenttest.NewHost()}, bus: bus}
	_, ok := agent.SteerFromHost(inner)
	require.True(t, ok, "the inner host has a steer source")
	h := local.WithoutSteer(inner)
	_, ok = agent.SteerFromHost(h)
	assert.False(t, ok)
	got, ok := agent.EventBusFromHost(h)
	assert.True(t, ok)
	assert.Same(t, bus, got)
	_, ok = agent.EventBusFromHost(local.WithoutSteer(agent.NoopHost{}))
	assert.False(t, ok, "no bus beneath, no bus")
	clock, ok := agent.CapabilityFromHost[agent.Clock](h)
	require.True(t, ok)
	assert.False(t, clock.Now().IsZero())
}

// REF 6.2.6: an async legacy delegation runs under the worker host:
// nothing of the caller's host reaches it, so AskUser is NotAvailable.
func TestLegacyAsync(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{legacy: true})
	e.agents.put("asker", agenttest.New(agenttest.AskUser("name?")))
	caller := agenttest.NewHost()
	caller.SetAskUser(func(context.Context, agent.UserPrompt) (agent.UserReply, error) {
		return agent.UserReply{Parts: []message.Part{message.TextPart("Ada")}}, nil
	})
	req := ask("asker", "go")
	req.Mode = delegation.ModeAsync
	resp, err := e.svc.Delegate(agent.ContextWithHost(timeout(t), caller), req)
	require.NoError(t, err)
	final := poll(t, e.svc, resp.ID)
	assert.Equal(t, delegation.StatusFailed, final.Status)
	require.NotNil(t, final.Error)
	assert.ErrorIs(t, final.Error.Err(), fault.NotAvailable)
}

// poll waits for delegation id to reach a terminal status.
func poll(t *testing.T, svc delegation.Service, id string) delegation.Response {
	t.Helper()
	var last delegation.Response
	require.Eventually(t, func() bool {
		r, err := svc.Get(context.Background(), id)
		require.NoError(t, err)
		require.NoError(t, r.Validate())
		last = r
		return r.Status.Terminal()
	}, wait, 5*time.Millisecond)
	return last
}

// A legacy sub-run whose caller watches its interrupts
// (delegation.WithInterruptsWatched, as the delegate host function does)
// does not read the caller's interrupt channel, which stays the caller's;
// it learns of the caller's interrupt through its ctx, ended with the
// interrupt as the cause, and ends interrupted: the delegation is
// canceled. Without the watch the sub-run reads the caller's channel as
// before.
func TestLegacyInterruptThroughContext(t *testing.T) {
	t.Parallel()
	for _, watched := range []bool{true, false} {
		e := newEnv(t, envConfig{legacy: true})
		sawChannel := make(chan bool, 1)
		e.agents.put("helper", agent.EngineFunc(func(ctx context.Context, _ agent.Run, h agent.Host, b *agent.Board) (*agent.Board, error) {
			sawChannel <- h.Interrupts() != nil
			<-ctx.Done()
			return b, context.Cause(ctx)
		}))
		caller := agenttest.NewHost()
		base := agent.ContextWithHost(timeout(t), caller)
		if watched {
			base = delegation.WithInterruptsWatched(base)
		}
		ctx, cancel := context.WithCancelCause(base)
		saw := make(chan bool, 1)
		go func() {
			saw <- <-sawChannel
			cancel(agent.Interrupted(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "stop"}))
		}()
		resp := e.delegate(t, ctx, "helper", "go")
		assert.Equal(t, !watched, <-saw, "the sub-run reads the caller's channel only when nobody watches it")
		assert.Equal(t, delegation.StatusCanceled, resp.Status)
		require.NotNil(t, resp.Error)
		assert.Equal(t, "interrupted", resp.Error.Code)
	}
}
