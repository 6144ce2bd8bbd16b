package graph_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A script node's invocation carries the node, its type, the script, the
// resolved config, the run's board, a host ABI, the run info and the
// engine's limits; Parallel is nil outside a parallel wave.
func TestScriptInvocation(t *testing.T) {
	t.Parallel()
	// REF 5.3.3 (strict config {runtime, source, name, config}; a fresh environment per invocation)
	// REF 5.2.5 (RunInfo, and the host on the ctx)
	// REF 5.4 (config is the node's config after ${board} resolution; parallel.cancelNode is false outside a wave)
	var sawHost atomic.Bool
	rt := newFake().on("inspect", func(ctx context.Context, inv sandbox.Invocation) error {
		_, ok := agent.HostFromContext(ctx)
		sawHost.Store(ok)
		return nil
	})
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - id: a
    type: script
    config:
      name: inspector
      source: inspect
      config: {who: "${board.user}", n: "${board.count}", keep: "\\${board.user}", list: ["${board.user}", 2]}
`)
	limits := sandbox.Limits{WallTime: time.Second, MaxEvents: 7}
	e := buildWith(t, doc, rt, graph.Options{Limits: limits})
	board := agent.NewBoard()
	board.Vars["user"], board.Vars["count"] = "ada", 3.0
	run := testRun()
	run.ParentRunID = "run-0"
	_, err := e.Execute(context.Background(), run, newHost(), board)
	require.NoError(t, err)
	invs := rt.invocations()
	require.Len(t, invs, 1)
	inv := invs[0]
	assert.Equal(t, "a", inv.Node)
	assert.Equal(t, graph.ScriptTypeName, inv.Type)
	assert.Equal(t, sandbox.Script{Name: "inspector", Source: "inspect"}, inv.Script)
	assert.Equal(t, map[string]any{"who": "ada", "n": 3.0, "keep": "${board.user}", "list": []any{"ada", json.Number("2")}}, inv.Config)
	assert.Equal(t, *board, inv.Board, "the board as the node found it")
	require.NotNil(t, inv.ABI)
	assert.Contains(t, inv.ABI.Functions(), "emit")
	assert.Equal(t, sandbox.RunInfo{RunID: "run-1", AgentID: "bot", ContextID: "ctx-1", ParentRunID: "run-0"}, inv.Run)
	assert.Equal(t, limits, inv.Limits)
	assert.Nil(t, inv.Parallel)
	assert.True(t, sawHost.Load())
}

// The name of a script defaults to the node id, and its source may be a
// {file} resolved at Build.
func TestScriptSourceFile(t *testing.T) {
	t.Parallel()
	// REF 5.3.3 (source may be {file}; name defaults to the node id)
	rt := newFake()
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: {file: a.js}}}]")
	opts := graph.Options{ResolveText: func(_ context.Context, raw json.RawMessage) (string, error) {
		assert.JSONEq(t, `{"file":"a.js"}`, string(raw))
		return "set from_file true", nil
	}}
	_, board, err := execute(t, buildWith(t, doc, rt, opts), nil)
	require.NoError(t, err)
	assert.Equal(t, true, board.Vars["from_file"])
	assert.Equal(t, "a", rt.invocations()[0].Script.Name)

	_, err = graph.Build(context.Background(), doc, graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt}})
	assert.ErrorIs(t, err, fault.NotAvailable, "no loader for a file")
}

// A skip condition that fails, or a reference that does not resolve,
// fails the node with a step error.
func TestStepErrors(t *testing.T) {
	t.Parallel()
	// REF 5.2.3 (skip condition; ${board} resolution; step error)
	// REF 5.2.6 (a missing var without a default → Validation)
	tests := []struct {
		name, node, want string
		kind             *fault.Kind
	}{
		{"skip condition", `{id: a, type: script, skip_condition: "explode == 1", config: {source: "set x 1"}}`, "explode is not a function", fault.Internal},
		{"reference", `{id: a, type: script, config: {source: "set x 1", config: {v: "${board.missing}"}}}`, `board var "missing" is not set`, fault.Validation},
		{"skip result", `{id: a, type: script, skip_condition: "1", config: {source: "set x 1"}}`, "want a boolean", fault.Validation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := parseDoc(t, "name: g\nentry: a\nnodes: ["+tt.node+"]")
			host, board, err := execute(t, buildWith(t, doc, newFake(), graph.Options{}), nil)
			assert.ErrorIs(t, err, tt.kind)
			assert.ErrorContains(t, err, tt.want)
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, "a", ne.Node)
			assert.NotContains(t, board.Vars, "x")
			assert.Equal(t, []string{event.SubjectRunStart("run-1"), event.SubjectStepError("run-1", "bot_node_a"),
				event.SubjectRunEnd("run-1")}, host.Subjects())
			var p event.StepPayload
			require.NoError(t, host.Envelopes()[1].Decode(&p))
			assert.Contains(t, p.Error, tt.want)
		})
	}
}

// A failing node is retried up to max_node_retries times on a rolled-back
// board; some kinds are never retried.
func TestRetries(t *testing.T) {
	t.Parallel()
	// REF 5.1.6 (build.max_node_retries)
	// REF 5.2.3 (retries with linear backoff and rollback; Interrupted, Aborted, BudgetExceeded and Validation are not retried)
	tests := []struct {
		name       string
		kind       *fault.Kind
		failures   int
		retries    int
		wantCalls  int
		wantFailed bool
	}{
		{"recovers", fault.NotAvailable, 2, 2, 3, false},
		{"exhausted", fault.NotAvailable, 5, 2, 3, true},
		{"no retries", fault.Internal, 1, 0, 1, true},
		{"validation", fault.Validation, 1, 3, 1, true},
		{"budget", fault.BudgetExceeded, 1, 3, 1, true},
		{"aborted", fault.Aborted, 1, 3, 1, true},
		{"interrupted", fault.Interrupted, 1, 3, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			rt := newFake().on("flaky", func(_ context.Context, inv sandbox.Invocation) error {
				n := calls.Add(1)
				assert.NotContains(t, inv.Board.Vars, "dirty", "the board was rolled back")
				assert.Len(t, inv.Board.Channel(agent.MainChannel), 0, "the channels were rolled back")
				inv.Board.Vars["dirty"] = true
				inv.Board.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, "partial"))
				if int(n) <= tt.failures {
					return fault.New(tt.kind, "flaky", "attempt %d", n)
				}
				return nil
			})
			doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: flaky}}]")
			_, _, err := execute(t, buildWith(t, doc, rt, graph.Options{MaxNodeRetries: tt.retries}), nil)
			assert.Equal(t, tt.wantCalls, int(calls.Load()))
			if tt.wantFailed {
				assert.ErrorIs(t, err, tt.kind)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// The backoff waits base × attempt and stops when the run's ctx ends.
func TestRetryBackoffStopsOnCancel(t *testing.T) {
	t.Parallel()
	// REF 5.2.3 (linear backoff)
	ctx, cancel := context.WithCancel(context.Background())
	rt := newFake().on("fail-then-cancel", func(context.Context, sandbox.Invocation) error {
		cancel()
		return fault.New(fault.NotAvailable, "x", "busy")
	})
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: fail-then-cancel}}]")
	e := buildWith(t, doc, rt, graph.Options{MaxNodeRetries: 3, RetryBackoff: time.Hour})
	_, err := e.Execute(ctx, testRun(), newHost(), nil)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Len(t, rt.invocations(), 1)
}

// limitedFake is a fake runtime that tells its own limits.
type limitedFake struct {
	*fakeRuntime
	limits sandbox.Limits
}

func (l limitedFake) Limits() sandbox.Limits { return l.limits }

// A script call's host ABI enforces the runtime's limits tightened by the
// engine's, and the invocation carries them.
func TestScriptLimits(t *testing.T) {
	t.Parallel()
	// REF 5.3.3 (each invocation runs under the call's limits)
	rt := limitedFake{fakeRuntime: newFake(), limits: sandbox.DefaultLimits()}
	rt.limits.MaxEvents = 1
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: \"emit token \\\"1\\\"\\nemit token \\\"2\\\"\"}}]")
	e := buildWith(t, doc, rt, graph.Options{Limits: sandbox.Limits{MaxEvents: 5, WallTime: time.Second}})
	_, _, err := execute(t, e, nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitEvents, le.Limit)
	assert.Equal(t, int64(1), le.Max)
	inv := rt.invocations()[0]
	assert.Equal(t, 1, inv.Limits.MaxEvents)
	assert.Equal(t, time.Second, inv.Limits.WallTime)
}

// meterHost is a host whose agent.Meter records the charges and refuses
// the one past limit.
type meterHost struct {
	*agenttest.Host
	mu      sync.Mutex
	charges []time.Duration
	limit   int
}

func (h *meterHost) ChargeCPU(d time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.charges = append(h.charges, d)
	if len(h.charges) > h.limit {
		return fault.New(fault.BudgetExceeded, "", "tenant %q: quota cpu_ms_per_turn of 1 reached", "acme")
	}
	return nil
}

// Every script call is charged to the host's agent.Meter; a refused
// charge fails the node with it, and the run stops there.
func TestScriptCallsChargedToTheMeter(t *testing.T) {
	t.Parallel()
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: set a 1}}, {id: b, type: script, config: {source: set b 1}}, {id: c, type: script, config: {source: set c 1}}]\nedges: [{from: a, to: b}, {from: b, to: c}]")
	host := &meterHost{Host: newHost(), limit: 1}
	board, err := buildWith(t, doc, newFake(), graph.Options{}).Execute(context.Background(), testRun(), host, nil)
	require.ErrorIs(t, err, fault.BudgetExceeded)
	assert.ErrorContains(t, err, `node "b"`)
	assert.ErrorContains(t, err, "cpu_ms_per_turn")
	assert.Len(t, host.charges, 2)
	assert.NotContains(t, board.Vars, "c")
}

// cpuRuntime reports a fixed CPU time for every call, as a worker
// process does from its rusage.
type cpuRuntime struct {
	sandbox.Runtime
	cpu time.Duration
}

func (r cpuRuntime) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	out, err := r.Runtime.Invoke(ctx, inv)
	out.CPU = r.cpu
	return out, err
}

// A runner that reports the CPU time of a call (Outcome.CPU) is charged
// that time, not the call's duration.
func TestScriptCallsChargeReportedCPU(t *testing.T) {
	t.Parallel()
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: set a 1}}]")
	host := &meterHost{Host: newHost(), limit: 10}
	_, err := buildWith(t, doc, cpuRuntime{Runtime: newFake(), cpu: 7 * time.Hour}, graph.Options{}).Execute(context.Background(), testRun(), host, nil)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{7 * time.Hour}, host.charges)
}
