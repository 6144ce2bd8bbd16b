package sandboxtest

import (
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func signalDone(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "signal_done"})
	require.NoError(t, res.Err)
	assert.Equal(t, float64(1), Var(t, res, "before"))
	assert.NotContains(t, res.Board.Vars, "after")
	in := env.Invoke(t, Call{Program: "signal_done_in_try"})
	require.NoError(t, in.Err)
	assert.Empty(t, in.Board.Vars, "neither catch nor finally runs after signal.done")
}

func signalInterrupt(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "signal_interrupt", Node: "asker"})
	RequireKind(t, res.Err, fault.Interrupted)
	var ie *agent.InterruptedError
	require.ErrorAs(t, res.Err, &ie)
	assert.Equal(t, agent.CauseUserInput, ie.Interrupt.Cause)
	assert.Equal(t, "need input", ie.Interrupt.Detail)
	assert.Contains(t, res.Err.Error(), "asker")
	assert.NotContains(t, res.Board.Vars, "after")
	text := env.Invoke(t, Call{Program: "signal_interrupt_text"})
	require.ErrorAs(t, text.Err, &ie)
	assert.Equal(t, agent.CauseCustom, ie.Interrupt.Cause)
	assert.Equal(t, "wait for me", ie.Interrupt.Detail)
}

func signalError(t *testing.T, env *Env) {
	for _, tc := range []struct {
		kind string
		want *fault.Kind
	}{
		{"validation", fault.Validation}, {"not_found", fault.NotFound}, {"budget_exceeded", fault.BudgetExceeded},
		{"policy_denied", fault.PolicyDenied}, {"not_available", fault.NotAvailable}, {"internal", fault.Internal},
		{"no_such_class", fault.Internal}, {"interrupted", fault.Internal}, {"", fault.Internal},
	} {
		res := env.Invoke(t, Call{Program: "signal_error", Node: "failer", Config: map[string]any{"kind": tc.kind}})
		RequireKind(t, res.Err, tc.want)
		var se *sandbox.ScriptError
		require.ErrorAs(t, res.Err, &se, tc.kind)
		assert.Equal(t, "failer", se.Node)
		assert.Equal(t, "it failed", se.Message)
		assert.JSONEq(t, `{"code":7}`, string(se.Detail))
		assert.False(t, errors.Is(res.Err, fault.Interrupted), "signal.error never interrupts")
	}
	res := env.Invoke(t, Call{Program: "signal_error_text"})
	RequireKind(t, res.Err, fault.Internal)
	assert.Contains(t, res.Err.Error(), "plain failure")
}

func uncaughtException(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "throw", Node: "thrower"})
	RequireKind(t, res.Err, fault.Internal)
	var se *sandbox.ScriptError
	require.ErrorAs(t, res.Err, &se)
	assert.Equal(t, "thrower", se.Node)
	assert.Contains(t, se.Message, "boom")
}

func compileError(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "syntax_error", Node: "broken"})
	RequireKind(t, res.Err, fault.Validation)
	assert.Contains(t, res.Err.Error(), "broken")
	assert.Empty(t, res.Board.Vars)
}
