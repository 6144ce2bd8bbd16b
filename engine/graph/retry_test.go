package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The attempts of a node step share its host ABI: the event budget is per
// step, so a retry does not get a fresh one, and the limit it then hits
// is not retried.
func TestRetriesShareCallBudgets(t *testing.T) {
	t.Parallel()
	// REF 5.2.3 (call budgets are per node step, not per attempt; a sandbox limit is never retried)
	rt := limitedFake{fakeRuntime: newFake(), limits: sandbox.DefaultLimits()}
	rt.limits.MaxEvents = 5
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - id: a
    type: script
    config: {source: "emit token \"1\"\nemit token \"2\"\nfail not_available again"}
`)
	e := buildWith(t, doc, rt, graph.Options{MaxNodeRetries: 5})
	_, _, err := execute(t, e, nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitEvents, le.Limit)
	assert.ErrorIs(t, err, fault.BudgetExceeded)
	assert.Len(t, rt.invocations(), 3, "the third attempt hit the step's event budget")
}

// Every retry is a node run counted against max_iterations.
func TestRetriesCountAgainstMaxIterations(t *testing.T) {
	t.Parallel()
	// REF 5.2.3 (retries count toward max_iterations)
	rt := newFake()
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: \"fail not_available busy\"}}]")
	e := buildWith(t, doc, rt, graph.Options{MaxIterations: 3, MaxNodeRetries: 10})
	_, _, err := execute(t, e, nil)
	require.ErrorIs(t, err, fault.BudgetExceeded)
	assert.ErrorContains(t, err, `node "a"`)
	assert.ErrorContains(t, err, "max_iterations 3")
	assert.Len(t, rt.invocations(), 3)
}

// A *sandbox.LimitError is never retried, not even a wall-time one whose
// kind is Timeout.
func TestLimitErrorNotRetried(t *testing.T) {
	t.Parallel()
	// REF 5.2.3 (a sandbox limit is not retried)
	tests := []struct {
		name string
		err  error
		kind *fault.Kind
	}{
		{"wall time", &sandbox.LimitError{Limit: sandbox.LimitWallTime, Node: "a", Max: int64(time.Second)}, fault.Timeout},
		{"wrapped memory", fault.Wrap(fault.Internal, &sandbox.LimitError{Limit: sandbox.LimitMemory, Node: "a", Max: 1}, "x", "y"), fault.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := newFake().on("limited", func(context.Context, sandbox.Invocation) error { return tt.err })
			doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: limited}}]")
			_, _, err := execute(t, buildWith(t, doc, rt, graph.Options{MaxNodeRetries: 3}), nil)
			assert.ErrorIs(t, err, tt.kind)
			assert.Len(t, rt.invocations(), 1)
		})
	}
}

// max_node_retries is capped.
func TestMaxNodeRetriesCap(t *testing.T) {
	t.Parallel()
	// REF 5.1.6 (build.max_node_retries is bounded)
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: x}}]")
	for _, n := range []int{-1, graph.MaxNodeRetriesCap + 1} {
		_, err := graph.Build(context.Background(), doc, graph.Options{MaxNodeRetries: n,
			Runtimes: map[string]sandbox.Runtime{"js": newFake()}})
		require.ErrorIs(t, err, fault.Validation, "max_node_retries %d", n)
		assert.ErrorContains(t, err, "max_node_retries")
	}
	_, err := graph.Build(context.Background(), doc, graph.Options{MaxNodeRetries: graph.MaxNodeRetriesCap,
		Runtimes: map[string]sandbox.Runtime{"js": newFake()}})
	assert.NoError(t, err)
}
