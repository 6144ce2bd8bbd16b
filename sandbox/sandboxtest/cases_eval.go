package sandboxtest

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evalNotAvailable reports whether the runtime declares that it evaluates
// no expressions (the NoEval program); it then checks that it refuses each
// of the programs' expressions with NotAvailable, naming the node, as the
// contract says.
func (e *Env) evalNotAvailable(t *testing.T, programs ...string) bool {
	t.Helper()
	if _, ok := e.Programs[NoEval]; !ok {
		return false
	}
	js := JSPrograms()
	for _, p := range programs {
		_, err := e.Runtime.Eval(context.Background(), sandbox.Evaluation{Node: "cond", Expr: js[p].Source})
		RequireKind(t, err, fault.NotAvailable)
		assert.Contains(t, err.Error(), "cond")
	}
	return true
}

func evalCondition(t *testing.T, env *Env) {
	if env.evalNotAvailable(t, "expr_condition", "expr_value") {
		return
	}
	got, err := env.Eval(t, "expr_condition", map[string]any{"tool_pending": true, "count": float64(3)}, sandbox.Limits{})
	require.NoError(t, err)
	assert.Equal(t, true, got)
	got, err = env.Eval(t, "expr_condition", map[string]any{"tool_pending": true, "count": float64(1)}, sandbox.Limits{})
	require.NoError(t, err)
	assert.Equal(t, false, got)
	got, err = env.Eval(t, "expr_value", map[string]any{"count": float64(4), "name": "n"}, sandbox.Limits{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"doubled": float64(8), "list": []any{"n", float64(4)}, "none": nil}, got)
}

func evalMissing(t *testing.T, env *Env) {
	if env.evalNotAvailable(t, "expr_missing") {
		return
	}
	got, err := env.Eval(t, "expr_missing", nil, sandbox.Limits{})
	require.NoError(t, err)
	assert.Equal(t, true, got)
	got, err = env.Eval(t, "expr_condition", map[string]any{"count": float64(5)}, sandbox.Limits{})
	require.NoError(t, err)
	assert.Equal(t, false, got, "tool_pending is not set: the condition is false")
}

func evalLimits(t *testing.T, env *Env) {
	if env.evalNotAvailable(t, "expr_loop", "expr_recurse") {
		return
	}
	_, err := evalBounded(t, env, "expr_loop", sandbox.Limits{WallTime: 200 * time.Millisecond})
	RequireLimit(t, err, sandbox.LimitWallTime, "cond")
	_, err = evalBounded(t, env, "expr_recurse", sandbox.Limits{StackDepth: 32})
	RequireLimit(t, err, sandbox.LimitStack, "cond")
}

func evalBounded(t *testing.T, env *Env, program string, limits sandbox.Limits) (any, error) {
	t.Helper()
	env.Script(t, program)
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := env.Eval(t, program, nil, limits)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(waitTimeout):
		t.Fatalf("expression %q did not stop within %s", program, waitTimeout)
	}
	return nil, nil
}

func evalIsolation(t *testing.T, env *Env) {
	if env.evalNotAvailable(t, "expr_pollute", "expr_inspect") {
		return
	}
	got, err := env.Eval(t, "expr_pollute", nil, sandbox.Limits{})
	require.NoError(t, err)
	require.Equal(t, true, got)
	got, err = env.Eval(t, "expr_inspect", nil, sandbox.Limits{})
	require.NoError(t, err)
	assert.Equal(t, true, got, "the second expression saw the first one's changes")
}

func evalSyntax(t *testing.T, env *Env) {
	if env.evalNotAvailable(t, "expr_syntax", "expr_statements") {
		return
	}
	for _, p := range []string{"expr_syntax", "expr_statements"} {
		_, err := env.Eval(t, p, map[string]any{"count": float64(1)}, sandbox.Limits{})
		RequireKind(t, err, fault.Validation)
		assert.Contains(t, err.Error(), "cond")
	}
}
