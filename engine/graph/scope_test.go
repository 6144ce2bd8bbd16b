package graph_test

import (
	"context"
	"sync"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scopedRuntime records run scopes and the run of each invocation.
type scopedRuntime struct {
	noopRuntime
	mu     sync.Mutex
	events []string
	fail   bool
}

func (s *scopedRuntime) BeginRun(_ context.Context, run sandbox.RunInfo) func() {
	s.record("begin " + run.RunID)
	return func() { s.record("end " + run.RunID) }
}

func (s *scopedRuntime) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	s.record("invoke " + inv.Node + " " + inv.Run.RunID)
	if s.fail {
		return sandbox.Outcome{}, &sandbox.LimitError{Limit: sandbox.LimitWallTime, Node: inv.Node, Max: 1e9}
	}
	return s.noopRuntime.Invoke(ctx, inv)
}

func (s *scopedRuntime) record(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

// A runtime that keeps per-run state sees the run begin before its first
// node and end after its last, once per Execute, also when the run fails.
func TestRunScopeBracketsTheRun(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		rt := &scopedRuntime{fail: fail}
		e := buildWith(t, chainDoc(2, "noop"), rt, graph.Options{})
		_, err := e.Execute(context.Background(), agent.Run{ID: "r1", AgentID: "a"}, agent.NoopHost{}, nil)
		want := []string{"begin r1", "invoke n0 r1", "invoke n1 r1", "end r1"}
		if fail {
			require.Error(t, err)
			want = []string{"begin r1", "invoke n0 r1", "end r1"}
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, want, rt.events, "fail=%v", fail)
	}
}
