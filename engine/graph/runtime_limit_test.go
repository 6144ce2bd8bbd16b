package graph_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/wasm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The run_time of a bound runtime bounds the whole run even when the
// engine's limits leave it out; the LimitError names the node that was
// running.
func TestRuntimeRunTimeBoundsRun(t *testing.T) {
	t.Parallel()
	// REF 5.2.2 (limits.run_time, the smallest of the engine's and the runtimes', bounds a run → Timeout)
	rt := limitedFake{fakeRuntime: newFake(), limits: sandbox.DefaultLimits()}
	rt.limits.RunTime = 20 * time.Millisecond
	rt.on("slow", func(ctx context.Context, _ sandbox.Invocation) error {
		<-ctx.Done()
		return fault.FromContext(ctx.Err(), "slow")
	})
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: slow}}]")
	e := buildWith(t, doc, rt, graph.Options{Timeout: 5 * time.Second, Limits: sandbox.Limits{RunTime: time.Hour}})
	_, _, err := execute(t, e, nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitRunTime, le.Limit)
	assert.Equal(t, "a", le.Node)
	assert.Equal(t, int64(20*time.Millisecond), le.Max)
	assert.ErrorIs(t, err, fault.Timeout)
	assert.NotContains(t, err.Error(), "between waves")
}

// slowCheckpointHost holds every checkpoint save for a while, so that a
// short run_time runs out between waves.
type slowCheckpointHost struct {
	*agenttest.Host
	hold time.Duration
}

func (h slowCheckpointHost) Checkpoint(ctx context.Context, cp agent.Checkpoint) error {
	time.Sleep(h.hold)
	return h.Host.Checkpoint(ctx, cp)
}

// When run_time runs out between waves the LimitError names the graph and
// the message says so.
func TestRunTimeBetweenWaves(t *testing.T) {
	t.Parallel()
	// REF 5.2.2 (run_time between waves names the graph)
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: \"set x 1\"}}, {id: b, type: script, config: {source: \"set y 1\"}}]\nedges: [{from: a, to: b}]")
	e := buildWith(t, doc, newFake(), graph.Options{Limits: sandbox.Limits{RunTime: 10 * time.Millisecond}})
	host := slowCheckpointHost{Host: newHost(), hold: 200 * time.Millisecond}
	out, err := e.Execute(context.Background(), testRun(), host, nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitRunTime, le.Limit)
	assert.Equal(t, "g", le.Node)
	assert.ErrorContains(t, err, "between waves")
	assert.NotContains(t, out.Vars, "y", "b never ran")
}

// The js runtime's default run_time (its settings) ends a looping graph.
func TestJSRunTimeEnforced(t *testing.T) {
	t.Parallel()
	// REF 5.2.2 (the runtime's run_time is enforced by the engine)
	rt, err := js.New(js.Options{Limits: sandbox.Limits{RunTime: 100 * time.Millisecond, WallTime: 5 * time.Second}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	doc := parseDoc(t, `
name: spin
entry: spin
nodes:
  - id: spin
    type: script
    config:
      source: |
        let x = 0; for (let i = 0; i < 1e9; i++) x += i;
edges:
  - {from: spin, to: spin}
`)
	_, _, err = execute(t, buildWith(t, doc, rt, graph.Options{MaxIterations: 1000}), nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitRunTime, le.Limit)
	assert.Equal(t, "spin", le.Node)
	assert.ErrorIs(t, err, fault.Timeout)
}

// At each wave boundary the board may not pass max_board_bytes (the
// smallest of the engine's and the runtimes'); the oversized board is not
// checkpointed.
func TestBoardBytesAtWaveBoundary(t *testing.T) {
	t.Parallel()
	// REF 5.2.4 (the board is bounded by max_board_bytes before the checkpoint)
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: 'set small 1'}}, {id: b, type: script, config: {source: grow}}]\nedges: [{from: a, to: b}]")
	rt := limitedFake{fakeRuntime: newFake(), limits: sandbox.DefaultLimits()}
	rt.limits.MaxBoardBytes = 1500
	rt.on("grow", func(_ context.Context, inv sandbox.Invocation) error {
		inv.Board.Vars["big"] = strings.Repeat("x", 2000)
		return nil
	})
	e := buildWith(t, doc, rt, graph.Options{Limits: sandbox.Limits{MaxBoardBytes: 1 << 20}})
	host, _, err := execute(t, e, nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitBoardBytes, le.Limit)
	assert.Equal(t, "b", le.Node)
	assert.Equal(t, int64(1500), le.Max)
	assert.ErrorIs(t, err, fault.BudgetExceeded)
	assert.Len(t, host.Checkpoints(), 1, "only the wave of a was checkpointed")
}

// A run_time that runs out while a condition runs ends the run with
// Timeout, the run_time LimitError, not with the Aborted error of the
// condition's stopped call.
func TestRunTimeDuringCondition(t *testing.T) {
	t.Parallel()
	// REF 5.2.2 (run_time → Timeout)
	rt, err := js.New(js.Options{Limits: sandbox.Limits{RunTime: 100 * time.Millisecond, WallTime: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: "1"}}
  - {id: b, type: script, config: {source: "1"}}
edges:
  - {from: a, to: b, condition: "(() => { for (;;) {} })()"}
`)
	_, _, err = execute(t, buildWith(t, doc, rt, graph.Options{}), nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le, "%v", err)
	assert.Equal(t, sandbox.LimitRunTime, le.Limit)
	assert.ErrorIs(t, err, fault.Timeout)
	assert.NotErrorIs(t, err, fault.Aborted)
}

// Both sandboxes tell their settings apart from their defaults.
var (
	_ graph.ConfiguredRuntime = (*js.Runtime)(nil)
	_ graph.ConfiguredRuntime = (*wasm.Runtime)(nil)
)

// configuredFake is a runtime whose settings set limits and whose
// defaults fill in the rest.
type configuredFake struct {
	limitedFake
	set sandbox.Limits
}

func (c configuredFake) ConfiguredLimits() sandbox.Limits { return c.set }

// newConfigured returns a fake whose settings set runTime (0: not set) and
// whose default run_time is def.
func newConfigured(runTime, def time.Duration) configuredFake {
	l := sandbox.DefaultLimits()
	l.RunTime = def
	if runTime > 0 {
		l.RunTime = runTime
	}
	return configuredFake{limitedFake: limitedFake{fakeRuntime: newFake(), limits: l}, set: sandbox.Limits{RunTime: runTime}}
}

// A run is bounded by the run_time the document sets, for the engine or in
// any bound runtime's settings, never by another runtime's default; the
// defaults bound it only when nothing sets one.
func TestRunTimeComesFromSettings(t *testing.T) {
	t.Parallel()
	// REF 5.2.2 (the run's run_time: the smallest set; a default only when none is set)
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: 'set x 1'}}]")
	build := func(opts graph.Options, rts map[string]sandbox.Runtime) *graph.Engine {
		opts.Runtimes = rts
		e, err := graph.Build(context.Background(), doc, opts)
		require.NoError(t, err)
		return e
	}
	tests := []struct {
		name   string
		limits sandbox.Limits
		rts    map[string]sandbox.Runtime
		want   time.Duration
	}{
		{"one runtime's setting wins over another's default",
			sandbox.Limits{}, map[string]sandbox.Runtime{
				graph.DefaultScriptRuntimeName: newConfigured(15*time.Minute, 2*time.Minute), "wasm": newConfigured(0, 2*time.Minute)},
			15 * time.Minute},
		{"the smallest of the settings",
			sandbox.Limits{}, map[string]sandbox.Runtime{
				graph.DefaultScriptRuntimeName: newConfigured(15*time.Minute, 0), "wasm": newConfigured(time.Minute, 0)},
			time.Minute},
		{"the engine's limits are a setting",
			sandbox.Limits{RunTime: 30 * time.Minute}, map[string]sandbox.Runtime{
				graph.DefaultScriptRuntimeName: newConfigured(0, 2*time.Minute), "wasm": newConfigured(0, time.Minute)},
			30 * time.Minute},
		{"nothing set: the smallest default",
			sandbox.Limits{}, map[string]sandbox.Runtime{
				graph.DefaultScriptRuntimeName: newConfigured(0, 2*time.Minute), "wasm": newConfigured(0, time.Minute)},
			time.Minute},
		{"a runtime that cannot tell its settings counts as setting its limits",
			sandbox.Limits{}, map[string]sandbox.Runtime{
				graph.DefaultScriptRuntimeName: newConfigured(15*time.Minute, 0), "other": limitedFake{fakeRuntime: newFake(), limits: sandbox.DefaultLimits()}},
			sandbox.DefaultRunTime},
		{"no limits anywhere: no bound",
			sandbox.Limits{}, map[string]sandbox.Runtime{graph.DefaultScriptRuntimeName: newFake()}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, build(graph.Options{Limits: tt.limits}, tt.rts).RunTime())
		})
	}
}

// The bound is enforced as it is computed: a runtime's small default does
// not end a run whose other runtime sets a longer run_time; the LimitError
// names the run_time that was set.
func TestRunTimeSetOutlastsAnotherDefault(t *testing.T) {
	t.Parallel()
	// REF 5.2.2 (a default only when none is set)
	rt := newConfigured(300*time.Millisecond, 0)
	rt.on("slow", func(ctx context.Context, _ sandbox.Invocation) error {
		<-ctx.Done()
		return fault.FromContext(ctx.Err(), "slow")
	})
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: slow}}]")
	e, err := graph.Build(context.Background(), doc, graph.Options{Runtimes: map[string]sandbox.Runtime{
		graph.DefaultScriptRuntimeName: rt, "wasm": newConfigured(0, time.Millisecond)}})
	require.NoError(t, err)
	_, _, err = execute(t, e, nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitRunTime, le.Limit)
	assert.Equal(t, int64(300*time.Millisecond), le.Max, "the run_time set, not the other runtime's default")
	assert.ErrorIs(t, err, fault.Timeout)
}
