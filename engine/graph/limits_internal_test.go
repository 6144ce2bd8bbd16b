package graph

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
)

// limitedRuntime is a runtime with limits of its own that runs nothing.
type limitedRuntime struct{ limits sandbox.Limits }

func (limitedRuntime) Name() string { return "limited" }
func (limitedRuntime) Invoke(context.Context, sandbox.Invocation) (sandbox.Outcome, error) {
	return sandbox.Outcome{}, nil
}
func (limitedRuntime) Eval(context.Context, sandbox.Evaluation) (any, error) { return nil, nil }
func (r limitedRuntime) Limits() sandbox.Limits                              { return r.limits }

// A call's limits are the engine's tightened by the runtime's, the same
// when kept from the last call as when made anew, and made again when the
// engine's limits change; a runtime without limits leaves them as they are.
func TestRuntimeLimitsTighten(t *testing.T) {
	t.Parallel()
	rt := limitedRuntime{sandbox.Limits{WallTime: time.Second, MaxEvents: 10}}
	var r runtimeLimits
	a := sandbox.Limits{WallTime: 2 * time.Second, MaxEvents: 5}
	b := sandbox.Limits{WallTime: 500 * time.Millisecond}
	for range 2 {
		assert.Equal(t, rt.limits.Tighten(a), r.tighten(rt, a))
	}
	assert.Equal(t, sandbox.Limits{WallTime: time.Second, MaxEvents: 5}, r.tighten(rt, a))
	assert.Equal(t, rt.limits.Tighten(b), r.tighten(rt, b))
	assert.Equal(t, rt.limits.Tighten(a), r.tighten(rt, a))
	assert.Equal(t, b, (&runtimeLimits{}).tighten(noLimits{}, b))
}

// noLimits is a runtime that tells no limits.
type noLimits struct{}

func (noLimits) Name() string { return "none" }
func (noLimits) Invoke(context.Context, sandbox.Invocation) (sandbox.Outcome, error) {
	return sandbox.Outcome{}, nil
}
func (noLimits) Eval(context.Context, sandbox.Evaluation) (any, error) { return nil, nil }
