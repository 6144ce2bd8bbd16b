package delegation_test

import (
	"context"
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 6.2.1: a request names a mode (sync, async, or empty for
// sync), a target, an input, metadata and an idempotency key.
func TestRequestValidate(t *testing.T) {
	t.Parallel()
	good := ask("helper", "hi")
	tests := []struct {
		name string
		edit func(*delegation.Request)
		ok   bool
	}{
		{"sync by default", func(*delegation.Request) {}, true},
		{"async", func(r *delegation.Request) { r.Mode = delegation.ModeAsync }, true},
		{"no input", func(r *delegation.Request) { r.Input = message.Message{} }, true},
		{"unknown mode", func(r *delegation.Request) { r.Mode = "later" }, false},
		{"no target", func(r *delegation.Request) { r.Target = "" }, false},
		{"padded target", func(r *delegation.Request) { r.Target = " helper" }, false},
		{"padded key", func(r *delegation.Request) { r.IdempotencyKey = "k " }, false},
		{"invalid input", func(r *delegation.Request) { r.Input = message.Message{Role: "robot"} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := good.Clone()
			tt.edit(&r)
			err := r.Validate()
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, fault.Validation)
		})
	}
}

// REF 6.2.1: the response invariants. A non-terminal response has
// no output or error; succeeded has no error; failed needs an error;
// canceled has no output.
func TestResponseInvariants(t *testing.T) {
	t.Parallel()
	out := []message.Message{message.NewTextMessage(message.RoleAssistant, "x")}
	e := &delegation.ErrorInfo{Code: "internal", Message: "boom"}
	tests := []struct {
		name string
		r    delegation.Response
		ok   bool
	}{
		{"accepted", delegation.Response{ID: "d", Status: delegation.StatusAccepted}, true},
		{"running", delegation.Response{ID: "d", Status: delegation.StatusRunning, RunID: "run-1"}, true},
		{"succeeded", delegation.Response{ID: "d", Status: delegation.StatusSucceeded, Output: out}, true},
		{"failed", delegation.Response{ID: "d", Status: delegation.StatusFailed, Error: e}, true},
		{"canceled", delegation.Response{ID: "d", Status: delegation.StatusCanceled}, true},
		{"canceled with a reason", delegation.Response{ID: "d", Status: delegation.StatusCanceled, Error: e}, true},
		{"no id", delegation.Response{Status: delegation.StatusAccepted}, false},
		{"unknown status", delegation.Response{ID: "d", Status: "done"}, false},
		{"running with output", delegation.Response{ID: "d", Status: delegation.StatusRunning, Output: out}, false},
		{"accepted with an error", delegation.Response{ID: "d", Status: delegation.StatusAccepted, Error: e}, false},
		{"succeeded with an error", delegation.Response{ID: "d", Status: delegation.StatusSucceeded, Error: e}, false},
		{"failed without an error", delegation.Response{ID: "d", Status: delegation.StatusFailed}, false},
		{"canceled with output", delegation.Response{ID: "d", Status: delegation.StatusCanceled, Output: out}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.r.Validate()
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, fault.Internal)
		})
	}
	info := delegation.ErrorInfoOf(fault.New(fault.PolicyDenied, "x", "no"))
	assert.ErrorIs(t, info.Err(), fault.PolicyDenied, "the kind survives the wire form")
	assert.Nil(t, delegation.ErrorInfoOf(nil))
	assert.ErrorIs(t, (&delegation.ErrorInfo{Code: "nonsense"}).Err(), fault.Internal)
}

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
	dir := delegation.NewLocalDirectory(nil)
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
