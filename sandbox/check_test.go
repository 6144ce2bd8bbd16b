package sandbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evalRuntime is a runtime named name whose Eval answers with eval and
// records the expressions it saw; Invoke is never called by a check.
type evalRuntime struct {
	name  string
	eval  func(sandbox.Evaluation) (any, error)
	exprs []string
}

func (r *evalRuntime) Name() string { return r.name }
func (r *evalRuntime) Invoke(context.Context, sandbox.Invocation) (sandbox.Outcome, error) {
	panic("a check must not run the script")
}
func (r *evalRuntime) Eval(_ context.Context, ev sandbox.Evaluation) (any, error) {
	r.exprs = append(r.exprs, ev.Expr)
	return r.eval(ev)
}

// checkerRuntime is a Checker.
type checkerRuntime struct {
	evalRuntime
	checked []sandbox.Script
	err     error
}

func (r *checkerRuntime) Check(_ context.Context, s sandbox.Script) error {
	r.checked = append(r.checked, s)
	return r.err
}

// A Checker checks every script itself, modules included; the probe is
// not used.
func TestCheckScriptUsesTheChecker(t *testing.T) {
	t.Parallel()
	rt := &checkerRuntime{evalRuntime: evalRuntime{name: "js"}, err: &sandbox.CompileError{Script: "m", Msg: "bad"}}
	err := sandbox.CheckScript(context.Background(), rt, sandbox.Script{Name: "m", Module: []byte{0}, Entry: "node"}, sandbox.Limits{})
	var ce *sandbox.CompileError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, fault.Validation)
	assert.Len(t, rt.checked, 1)
	assert.Empty(t, rt.exprs)
}

// Source on the js runtime is compiled as the body of a function that is
// never called: the wrapper adds no line, a compiler error becomes a
// CompileError with the script's own line and column, and a source that
// closes the function early is refused.
func TestCheckScriptProbe(t *testing.T) {
	t.Parallel()
	ok := &evalRuntime{name: "js", eval: func(sandbox.Evaluation) (any, error) { return "function", nil }}
	require.NoError(t, sandbox.CheckScript(context.Background(), ok, sandbox.Script{Name: "a", Source: "x = 1"}, sandbox.Limits{}))
	assert.Equal(t, []string{"typeof (function() {x = 1\n})"}, ok.exprs)

	for _, tc := range []struct {
		msg          string
		line, column int
		text         string
	}{
		{"compile a: a: Line 3:7 Unexpected token ;", 3, 7, "Unexpected token ;"},
		{"compile a: a: Line 1:24 Unexpected token ; (and 2 more errors)", 1, 4, "Unexpected token ; (and 2 more errors)"},
		{"compile a: something without a place", 0, 0, "compile a: something without a place"},
	} {
		bad := &evalRuntime{name: "js", eval: func(sandbox.Evaluation) (any, error) {
			return nil, fault.New(fault.Validation, "", "%s", tc.msg)
		}}
		err := sandbox.CheckScript(context.Background(), bad, sandbox.Script{Name: "a", Source: "x"}, sandbox.Limits{})
		var ce *sandbox.CompileError
		require.ErrorAs(t, err, &ce, tc.msg)
		assert.ErrorIs(t, err, fault.Validation)
		assert.Equal(t, "a", ce.Script)
		assert.Equal(t, tc.line, ce.Line, tc.msg)
		assert.Equal(t, tc.column, ce.Column, tc.msg)
		assert.Equal(t, tc.text, ce.Msg)
	}

	escaped := &evalRuntime{name: "js", eval: func(sandbox.Evaluation) (any, error) { return "functionundefined", nil }}
	err := sandbox.CheckScript(context.Background(), escaped, sandbox.Script{Name: "a", Source: "}) + f() + (function() {"}, sandbox.Limits{})
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, "not a function body")

	failing := &evalRuntime{name: "js", eval: func(sandbox.Evaluation) (any, error) { return nil, fault.New(fault.Timeout, "", "wall time") }}
	err = sandbox.CheckScript(context.Background(), failing, sandbox.Script{Name: "a", Source: "x"}, sandbox.Limits{})
	assert.ErrorIs(t, err, fault.Timeout)
}

// What cannot be checked without running is left to the first call: a
// module on a runtime that is no Checker, source on a runtime that is not
// the js runtime, a runtime that evaluates no expressions.
func TestCheckScriptLeavesWhatItCannotCheck(t *testing.T) {
	t.Parallel()
	never := func(sandbox.Evaluation) (any, error) { return nil, errors.New("not called") }
	for _, tc := range []struct {
		rt     *evalRuntime
		script sandbox.Script
	}{
		{&evalRuntime{name: "wasm", eval: never}, sandbox.Script{Name: "m", Module: []byte{0}, Entry: "node"}},
		{&evalRuntime{name: "fake", eval: never}, sandbox.Script{Name: "s", Source: "x"}},
		{&evalRuntime{name: "js", eval: func(sandbox.Evaluation) (any, error) {
			return nil, fault.New(fault.NotAvailable, "", "no expressions")
		}}, sandbox.Script{Name: "s", Source: "x"}},
	} {
		assert.NoError(t, sandbox.CheckScript(context.Background(), tc.rt, tc.script, sandbox.Limits{}), tc.rt.name)
	}
}

// A runtime that panics fails the check with an Internal error instead of
// taking the process down.
func TestCheckScriptRecoversFromABrokenRuntime(t *testing.T) {
	t.Parallel()
	rt := &evalRuntime{name: "js", eval: func(sandbox.Evaluation) (any, error) { panic("nil runner") }}
	err := sandbox.CheckScript(context.Background(), rt, sandbox.Script{Name: "s", Source: "x"}, sandbox.Limits{})
	assert.ErrorIs(t, err, fault.Internal)
	assert.ErrorContains(t, err, "nil runner")
}
