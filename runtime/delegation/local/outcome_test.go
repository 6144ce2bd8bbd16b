package local_test

import (
	"context"
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 6.2.1: every run outcome maps onto a response that keeps the
// invariants: completed is succeeded with the output; failed is failed
// with the run's error and its kind; interrupted is canceled without
// output.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	e.agents.put("ok", agenttest.New(agenttest.Say("done")))
	e.agents.put("broken", agenttest.New(agenttest.Fail(fault.New(fault.BudgetExceeded, "tool", "too many calls"))))
	e.agents.put("stopped", agenttest.New(agenttest.Say("partial"),
		agenttest.Func(func(context.Context, *agenttest.Env) error {
			return agent.Interrupted(agent.Interrupt{Cause: agent.CauseCustom, Detail: "enough"})
		})))
	ctx := timeout(t)

	resp := e.delegate(t, ctx, "ok", "go")
	assert.Equal(t, delegation.StatusSucceeded, resp.Status)
	assert.Equal(t, "done", agenttest.ReplyText(resp.Output))
	assert.Equal(t, "ok", resp.Target)
	assert.Regexp(t, `^run-[0-9a-f]{16}$`, resp.RunID)
	assert.Regexp(t, `^dlg-[0-9a-f]{16}$`, resp.ID)

	resp = e.delegate(t, ctx, "broken", "go")
	assert.Equal(t, delegation.StatusFailed, resp.Status)
	require.NotNil(t, resp.Error)
	assert.ErrorIs(t, resp.Error.Err(), fault.BudgetExceeded)
	assert.Contains(t, resp.Error.Message, "too many calls")

	resp = e.delegate(t, ctx, "stopped", "go")
	assert.Equal(t, delegation.StatusCanceled, resp.Status)
	assert.Empty(t, resp.Output)

	got, err := e.svc.Get(ctx, resp.ID)
	require.NoError(t, err)
	assert.Equal(t, resp, got, "Get returns the latest response")
	_, err = e.svc.Get(ctx, "dlg-none")
	assert.ErrorIs(t, err, fault.NotFound)
}

// REF 6.2.1: Delegate refuses what it cannot run before anything
// runs.
func TestDelegateRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	ctx := timeout(t)
	var noCtx context.Context
	_, err := e.svc.Delegate(noCtx, ask("x", "y"))
	assert.ErrorIs(t, err, fault.Validation)
	_, err = e.svc.Delegate(ctx, delegation.Request{Target: ""})
	assert.ErrorIs(t, err, fault.Validation)
	_, err = e.svc.Delegate(ctx, ask("nobody", "hi"))
	assert.ErrorIs(t, err, fault.NotFound)
	require.NoError(t, e.svc.Close())
	require.NoError(t, e.svc.Close(), "Close is idempotent")
	e.agents.put("ok", agenttest.New(agenttest.Say("done")))
	_, err = e.svc.Delegate(ctx, ask("ok", "hi"))
	assert.ErrorIs(t, err, fault.NotAvailable)
}

// REF 6.2.1: the directory lists its agents with their cards, sorted,
// and finds one by id; an unknown id is NotFound and an unbound directory
// is NotAvailable.
func TestDirectory(t *testing.T) {
	t.Parallel()
	ags := newAgents()
	ags.put("writer", agenttest.New())
	ags.put("critic", agenttest.New())
	dir := local.NewDirectory(nil)
	ctx := context.Background()
	_, err := dir.List(ctx)
	assert.ErrorIs(t, err, fault.NotAvailable)
	require.ErrorIs(t, dir.BindDeployment("not a deployment"), fault.Validation)
	require.NoError(t, dir.BindDeployment(ags))

	list, err := dir.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "critic", list[0].ID)
	assert.Equal(t, "CRITIC", list[0].Card.Name)
	tg, err := dir.Get(ctx, "writer")
	require.NoError(t, err)
	assert.Equal(t, "WRITER", tg.Card.Name)
	_, err = dir.Get(ctx, "nobody")
	assert.ErrorIs(t, err, fault.NotFound)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = dir.List(cancelled)
	assert.True(t, errors.Is(err, fault.Aborted))
}
