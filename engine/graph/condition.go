package graph

import (
	"context"
	"fmt"
	"maps"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

// The syntax probe wraps a condition in an arrow function that is never
// called, so that Build can have the runtime compile it without running
// it: the probe evaluates to the string "function".
const (
	probePrefix = "typeof (() => (\n"
	probeSuffix = "\n))"
)

// condition is a compiled edge condition or skip condition.
type condition struct {
	expr  string
	path  string // "edges[3].condition" or "nodes[1].skip_condition"
	where string // "edge a -> b" or "node \"x\"", for messages
	owner string // "a -> b" or "x": Evaluation.Node
	rt    sandbox.Runtime
}

// newCondition checks expr's syntax through rt (REF 5.1.5): the
// runtime compiles the probe, which runs none of expr. A nil rt is a build
// error naming the place.
func newCondition(ctx context.Context, expr, path, where, owner string, rt sandbox.Runtime, rtName string, limits sandbox.Limits) (*condition, error) {
	if rt == nil {
		return nil, &DocumentError{Op: opBuild, Path: path,
			Msg: fmt.Sprintf("%s: a condition needs script runtime %q, and none is bound", where, rtName)}
	}
	c := &condition{expr: expr, path: path, where: where, owner: owner, rt: rt}
	v, err := rt.Eval(ctx, sandbox.Evaluation{Node: owner, Expr: probePrefix + expr + probeSuffix, Limits: limits})
	if err != nil {
		return nil, &DocumentError{Op: opBuild, Path: path, Msg: where + ": does not compile", Kind: fault.KindOr(err, fault.Validation), Err: err}
	}
	if v != "function" {
		return nil, &DocumentError{Op: opBuild, Path: path, Msg: fmt.Sprintf("%s: is not a single expression", where)}
	}
	return c, nil
}

// eval evaluates the condition over vars; a result that is not a boolean
// is a Validation error naming the place.
func (c *condition) eval(ctx context.Context, vars map[string]any, limits sandbox.Limits) (bool, error) {
	v, err := c.rt.Eval(ctx, sandbox.Evaluation{Node: c.owner, Expr: c.expr, Vars: vars, Limits: limits})
	if err != nil {
		return false, fault.Wrap(fault.KindOr(err, fault.Validation), err, "evaluate condition", "%s: %s", c.path, c.where)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fault.New(fault.Validation, "evaluate condition", "%s: %s: %q gave %s, want a boolean",
			c.path, c.where, abbreviate(c.expr), describe(v))
	}
	return b, nil
}

// conditionVars returns what conditions see: the board vars plus
// __iterations, the engine's value winning.
func conditionVars(vars map[string]any, iterations int) map[string]any {
	out := make(map[string]any, len(vars)+1)
	maps.Copy(out, vars)
	out[VarIterations] = iterations
	return out
}

func describe(v any) string {
	if v == nil {
		return "null"
	}
	s := fmt.Sprintf("%v", v)
	return fmt.Sprintf("%T %s", v, abbreviate(s))
}
