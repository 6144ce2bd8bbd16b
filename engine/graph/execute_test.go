package graph_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each fixture runs to a golden transcript: the events it published (step
// start/complete, deltas, fork/join, run start/end), its checkpoints and
// its final board.
func TestRunTranscripts(t *testing.T) {
	t.Parallel()
	// REF 5.1.3 (a branch ends at __end__ or when no edge fires; the run ends when the frontier is empty)
	// REF 5.2.3 (skip, resolve, start, handler, complete)
	// REF 5.2.4 (iterations, checkpoint per wave, next frontier from conditions)
	// REF 5.3.3 (script nodes)
	// REF 5.7.1 (run start)
	// REF 5.7.2 (run end, once)
	parallel := graph.Options{Parallel: graph.ParallelOptions{Enabled: true, MaxConcurrency: 1}}
	tests := []struct {
		fixture, golden string
		opts            graph.Options
		vars            map[string]any
	}{
		{"chain.yaml", "chain.golden", graph.Options{}, nil},
		{"chain.yaml", "chain-named.golden", graph.Options{}, map[string]any{"name": "Ada"}},
		{"router.yaml", "router.golden", graph.Options{}, nil},
		{"loop.yaml", "loop.golden", graph.Options{}, nil},
		{"skip.yaml", "skip-ran.golden", graph.Options{}, map[string]any{"skip_gate": false}},
		{"skip.yaml", "skip-skipped.golden", graph.Options{}, map[string]any{"skip_gate": true}},
		{"fanout.yaml", "fanout-sequential.golden", graph.Options{}, nil},
		{"fanout.yaml", "fanout-parallel.golden", parallel, nil},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			t.Parallel()
			e := buildWith(t, loadDoc(t, tt.fixture), newFake(), tt.opts)
			board := agent.NewBoard()
			for k, v := range tt.vars {
				board.Vars[k] = v
			}
			host, out, err := execute(t, e, board)
			golden(t, tt.golden, transcript(t, host, out, err))
		})
	}
}

// Run start and end carry the graph name and the run_id, agent_id and
// graph_id headers; end carries the error; end is the last event.
func TestRunStartAndEnd(t *testing.T) {
	t.Parallel()
	// REF 5.7.1
	// REF 5.7.3 (payload {graph, error?}, headers graph_id, agent_id, run_id)
	// REF 5.7.5 (nothing is published after run end)
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: 'fail not_found no such thing'}}]")
	host, _, err := execute(t, buildWith(t, doc, newFake(), graph.Options{}), nil)
	require.ErrorIs(t, err, fault.NotFound)
	envs := host.Envelopes()
	require.GreaterOrEqual(t, len(envs), 2)
	start, end := envs[0], envs[len(envs)-1]
	assert.Equal(t, event.SubjectRunStart("run-1"), start.Subject)
	assert.Equal(t, event.SubjectRunEnd("run-1"), end.Subject)
	// REF 13.4.4: run end adds the script time its script node spent
	assert.NotEmpty(t, end.Header(event.HeaderCPUMs))
	endHeaders := maps.Clone(end.Headers)
	delete(endHeaders, event.HeaderCPUMs)
	assert.Equal(t, map[string]string{"run_id": "run-1", "agent_id": "bot", "graph_id": "g"}, endHeaders)
	// REF 13.4.1: run start names the run's context id (and tenant, when it has one) too
	assert.Equal(t, map[string]string{"run_id": "run-1", "agent_id": "bot", "graph_id": "g", "context_id": "ctx-1"}, start.Headers)
	var p event.RunPayload
	require.NoError(t, end.Decode(&p))
	assert.Equal(t, "g", p.Graph)
	assert.Equal(t, err.Error(), p.Error)
	var sp event.RunPayload
	require.NoError(t, start.Decode(&sp))
	assert.Equal(t, event.RunPayload{Graph: "g"}, sp)
}

// A failed run start is only logged; a failed run end is joined into the
// result as an Internal RunEndPublishError, whatever the outcome.
func TestRunEventPublishFailures(t *testing.T) {
	t.Parallel()
	// REF 5.7.1 (a failed start publish is only logged)
	// REF 5.7.4 (a failed end publish joins a RunEndPublishError)
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: 'set x 1'}}]")
	e := buildWith(t, doc, newFake(), graph.Options{})
	boom := errors.New("bus down")
	for _, fail := range []string{event.SubjectRunStart("run-1"), event.SubjectRunEnd("run-1")} {
		host := agenttest.NewHost()
		host.SetPublishError(func(_ context.Context, env event.Envelope) error {
			if env.Subject == fail {
				return boom
			}
			return nil
		})
		board, err := e.Execute(context.Background(), testRun(), host, agent.NewBoard())
		assert.Equal(t, 1.0, board.Vars["x"], "the run itself went through")
		if fail == event.SubjectRunStart("run-1") {
			assert.NoError(t, err)
			continue
		}
		var rep *agent.RunEndPublishError
		require.ErrorAs(t, err, &rep)
		assert.Equal(t, "run-1", rep.RunID)
		assert.ErrorIs(t, err, boom)
		assert.ErrorIs(t, err, fault.Internal)
	}
}

// Run end is published with a ctx of its own: after a cancel, and within
// run_end_publish_timeout even when the publisher blocks.
func TestRunEndDetachedContext(t *testing.T) {
	t.Parallel()
	// REF 5.7.2 (its own ctx, detached from cancellation, bounded by run_end_publish_timeout)
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: 'set x 1'}}]")
	e := buildWith(t, doc, newFake(), graph.Options{RunEndPublishTimeout: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	host := agenttest.NewHost()
	var endCtxErr error
	host.SetPublishError(func(pctx context.Context, env event.Envelope) error {
		if env.Subject == event.SubjectRunEnd("run-1") {
			endCtxErr = pctx.Err()
			<-pctx.Done() // a publisher that blocks until its ctx ends
			return pctx.Err()
		}
		return nil
	})
	_, err := e.Execute(ctx, testRun(), host, nil)
	assert.NoError(t, endCtxErr, "the end publish starts with a live ctx")
	assert.ErrorIs(t, err, context.Canceled, "the run itself was cancelled")
	assert.ErrorIs(t, err, fault.Aborted)
	var rep *agent.RunEndPublishError
	require.ErrorAs(t, err, &rep)
	assert.ErrorIs(t, rep, context.DeadlineExceeded, "bounded by run_end_publish_timeout")
}

// Execute refuses a nil ctx or host.
func TestExecuteArguments(t *testing.T) {
	t.Parallel()
	e := buildWith(t, loadDoc(t, "chain.yaml"), newFake(), graph.Options{})
	//nolint:staticcheck // a nil ctx is the point
	_, err := e.Execute(nil, testRun(), agenttest.NewHost(), nil)
	assert.ErrorIs(t, err, fault.Validation)
	_, err = e.Execute(context.Background(), testRun(), nil, nil)
	assert.ErrorIs(t, err, fault.Validation)
	var typed *agenttest.Host
	_, err = e.Execute(context.Background(), testRun(), typed, nil)
	assert.ErrorIs(t, err, fault.Validation)
	board, err := e.Execute(context.Background(), testRun(), agenttest.NewHost(), &agent.Board{})
	require.NoError(t, err)
	assert.Equal(t, 2.0, board.Vars["x"], "a board without maps gets them")
}

// The frontier starts at the resume checkpoint's successors, else at the
// WithStartNode override, else at the entry.
func TestFrontierStart(t *testing.T) {
	t.Parallel()
	// REF 5.2.1
	e := buildWith(t, loadDoc(t, "chain.yaml"), newFake(), graph.Options{})
	ctx := graph.WithStartNode(context.Background(), "b")
	board := agent.NewBoard()
	board.Vars["x"] = 41.0
	out, err := e.Execute(ctx, testRun(), agenttest.NewHost(), board)
	require.NoError(t, err)
	assert.Equal(t, 42.0, out.Vars["x"], "started at b, skipping a")

	_, err = e.Execute(graph.WithStartNode(context.Background(), "nope"), testRun(), agenttest.NewHost(), nil)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `start node "nope" is not a node`)

	run := testRun()
	cpBoard := agent.NewBoard()
	cpBoard.Vars["x"] = 1.0
	run.ResumeFrom = &agent.Checkpoint{ExecID: "run-1", Steps: []string{"b"}, Iteration: 2, Board: cpBoard}
	host := agenttest.NewHost()
	out, err = e.Execute(ctx, run, host, agent.NewBoard())
	require.NoError(t, err)
	assert.Equal(t, 1.0, out.Vars["x"], "the checkpoint wins over the start node: only c ran")
	assert.Equal(t, "hello world, x=1", out.Vars["greeting"])
	id, ok := graph.StartNodeFromContext(ctx)
	assert.True(t, ok)
	assert.Equal(t, "b", id)
}

// A cancelled ctx fails the run by its cause before the next wave.
func TestBeforeWaveContext(t *testing.T) {
	t.Parallel()
	// REF 5.2.2 (cancel → Aborted, deadline → Timeout, interrupt cause → Interrupted)
	e := buildWith(t, loadDoc(t, "chain.yaml"), newFake(), graph.Options{})
	intr := agent.Interrupted(agent.Interrupt{Cause: agent.CauseUserCancel})
	tests := []struct {
		name string
		ctx  func() context.Context
		kind *fault.Kind
		is   error
	}{
		{"cancel", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, fault.Aborted, context.Canceled},
		{"deadline", func() context.Context {
			ctx, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
			t.Cleanup(cancel)
			return ctx
		}, fault.Timeout, context.DeadlineExceeded},
		{"interrupt cause", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(intr)
			return ctx
		}, fault.Interrupted, intr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			host := agenttest.NewHost()
			_, err := e.Execute(tt.ctx(), testRun(), host, nil)
			assert.ErrorIs(t, err, tt.kind)
			assert.ErrorIs(t, err, tt.is)
			assert.Equal(t, []string{event.SubjectRunStart("run-1"), event.SubjectRunEnd("run-1")}, host.Subjects(),
				"no node ran")
		})
	}
}

// build.timeout and limits.run_time bound a whole run.
func TestRunDeadlines(t *testing.T) {
	t.Parallel()
	// REF 5.1.6 (build.timeout)
	// REF 5.2.2 (deadline → Timeout)
	rt := newFake().on("slow", func(ctx context.Context, _ sandbox.Invocation) error {
		<-ctx.Done()
		return fault.FromContext(ctx.Err(), "slow")
	})
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: slow}}]")
	_, _, err := execute(t, buildWith(t, doc, rt, graph.Options{Timeout: 10 * time.Millisecond}), nil)
	assert.ErrorIs(t, err, fault.Timeout)
	assert.ErrorContains(t, err, "build.timeout of 10ms exceeded")

	_, _, err = execute(t, buildWith(t, doc, rt, graph.Options{Limits: sandbox.Limits{RunTime: 10 * time.Millisecond}}), nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitRunTime, le.Limit)
	assert.ErrorIs(t, err, fault.Timeout)
}

// An interrupt waiting before the first wave stops the run there and names
// the first frontier node.
func TestBeforeWaveInterrupt(t *testing.T) {
	t.Parallel()
	// REF 5.2.2 (interrupt → __interrupted_node = first frontier node, agent.Interrupted)
	// REF 5.5.2
	e := buildWith(t, loadDoc(t, "chain.yaml"), newFake(), graph.Options{})
	host := agenttest.NewHost()
	host.Interrupt(agent.Interrupt{Cause: agent.CauseUserInput, Detail: "new message"})
	board, err := e.Execute(context.Background(), testRun(), host, nil)
	var ie *agent.InterruptedError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, agent.CauseUserInput, ie.Interrupt.Cause)
	assert.Equal(t, "a", board.Vars[graph.VarInterruptedNode])
	assert.NotContains(t, board.Vars, "x", "no node ran")
	assert.Empty(t, host.Checkpoints())
}

// A run whose next wave would pass max_iterations fails with
// BudgetExceeded before running it.
func TestMaxIterations(t *testing.T) {
	t.Parallel()
	// REF 5.1.6 (build.max_iterations)
	// REF 5.2.2 (iterations + len(wave) > max_iterations → BudgetExceeded)
	e := buildWith(t, loadDoc(t, "loop.yaml"), newFake(), graph.Options{MaxIterations: 2})
	host, board, err := execute(t, e, nil)
	assert.ErrorIs(t, err, fault.BudgetExceeded)
	assert.ErrorContains(t, err, "2 node runs plus a wave of 1 exceed max_iterations 2")
	assert.Equal(t, 2.0, board.Vars["n"])
	assert.Len(t, host.Checkpoints(), 2)

	e = buildWith(t, loadDoc(t, "loop.yaml"), newFake(), graph.Options{MaxIterations: 4})
	_, board, err = execute(t, e, nil)
	require.NoError(t, err, "exactly enough")
	assert.Equal(t, true, board.Vars["finished"])
}

// Two edges into the same node put it in the next wave once.
func TestWaveDeduplicates(t *testing.T) {
	t.Parallel()
	// REF 5.2.2 (the wave is the frontier with duplicates removed)
	// REF 5.2.4 (the next frontier is deduplicated)
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: incr a}}
  - {id: b, type: script, config: {source: incr b}}
edges:
  - {from: a, to: b}
  - {from: a, to: b, condition: "true"}
`)
	rt := newFake()
	host, board, err := execute(t, buildWith(t, doc, rt, graph.Options{}), nil)
	require.NoError(t, err)
	assert.Equal(t, 1.0, board.Vars["b"])
	assert.Len(t, rt.invocations(), 2)
	cps := host.Checkpoints()
	require.Len(t, cps, 2)
	assert.Equal(t, []string{"b"}, cps[1].Steps)
}

// Every wave writes a checkpoint with the fields of REF 5.2.4; a
// failed checkpoint is only logged.
func TestCheckpointFields(t *testing.T) {
	t.Parallel()
	// REF 5.2.4 (checkpoint {exec_id, steps, iteration, board, attributes, timestamp, original_started_at, spec_version}; a failure is only logged)
	e := buildWith(t, loadDoc(t, "chain.yaml"), newFake(), graph.Options{})
	run := testRun()
	run.StartedAt = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	host := agenttest.NewHost()
	before := time.Now().UTC()
	_, err := e.Execute(context.Background(), run, host, nil)
	require.NoError(t, err)
	cps := host.Checkpoints()
	require.Len(t, cps, 3)
	cp := cps[1]
	require.NoError(t, cp.Validate())
	assert.Equal(t, "run-1", cp.ExecID)
	assert.Equal(t, []string{"b"}, cp.Steps)
	assert.Equal(t, 2, cp.Iteration)
	assert.Equal(t, 2.0, cp.Board.Vars["x"])
	assert.Equal(t, map[string]string{"graph": "chain"}, cp.Attributes)
	assert.False(t, cp.Timestamp.Before(before))
	assert.Equal(t, run.StartedAt, cp.OriginalStartedAt)
	assert.Equal(t, "1", cp.SpecVersion)
	// A sequential wave's checkpoint is stamped when its node completed:
	// the time of its step complete event, in UTC.
	var completed []time.Time
	for _, env := range host.Envelopes() {
		if strings.HasSuffix(env.Subject, ".complete") && strings.Contains(env.Subject, ".step.") {
			completed = append(completed, env.Time)
		}
	}
	require.Len(t, completed, len(cps))
	for i, cp := range cps {
		assert.True(t, cp.Timestamp.Equal(completed[i]), "checkpoint %d at %v, its node completed at %v", i, cp.Timestamp, completed[i])
		assert.Equal(t, time.UTC, cp.Timestamp.Location())
	}

	failing := agenttest.NewHost()
	failing.SetCheckpointError(errors.New("disk full"))
	board, err := e.Execute(context.Background(), run, failing, nil)
	require.NoError(t, err, "a failed checkpoint does not fail the run")
	assert.Equal(t, "hello world, x=2", board.Vars["greeting"])
}

// Conditions see __iterations, and the engine's value wins over a board
// var of that name.
func TestConditionsSeeIterations(t *testing.T) {
	t.Parallel()
	// REF 5.2.4 (conditions see the board vars plus __iterations; the kernel's value wins)
	e := buildWith(t, loadDoc(t, "loop.yaml"), newFake(), graph.Options{})
	board := agent.NewBoard()
	board.Vars[graph.VarIterations] = 100.0
	_, out, err := execute(t, e, board)
	require.NoError(t, err)
	assert.Equal(t, 3.0, out.Vars["n"], "the board's __iterations did not end the loop early")
	assert.Equal(t, true, out.Vars["finished"])
}

// A condition whose result is not a boolean, or that fails, fails the run
// with an error naming the edge.
func TestConditionErrors(t *testing.T) {
	t.Parallel()
	// REF 5.2.4 (conditions route)
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: 'set kind "x"'}}
  - {id: b, type: script, config: {source: 'set y 1'}}
edges:
  - {from: a, to: __end__, condition: 'kind == "x"'}
  - {from: a, to: b, condition: 'kind'}
`)
	_, _, err := execute(t, buildWith(t, doc, newFake(), graph.Options{}), nil)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `edges[1].condition: edge a -> b: "kind" gave string x, want a boolean`)

	doc.Edges[1].Condition = "explode == 1"
	_, _, err = execute(t, buildWith(t, doc, newFake(), graph.Options{}), nil)
	assert.ErrorIs(t, err, fault.Internal, "the runtime's kind is kept")
	assert.ErrorContains(t, err, "edges[1].condition: edge a -> b")
	assert.ErrorContains(t, err, "explode is not a function")

	doc.Edges[1].Condition = "missing == 1"
	_, board, err := execute(t, buildWith(t, doc, newFake(), graph.Options{}), nil)
	require.NoError(t, err, "a var that is not set reads as undefined")
	assert.NotContains(t, board.Vars, "y")
}

// Every event of a run (run start, each step, run end) carries the trace
// span of the run's ctx, a fresh sortable id, its time and the run's
// headers (run_id, agent_id, graph_id); a step event names its node in its
// subject (the actor) and its payload (node_id).
func TestRunEventsCarrySpanAndHeaders(t *testing.T) {
	t.Parallel()
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: 'set x 1'}}, {id: b, type: script, config: {source: 'set y 2'}}]\nedges: [{from: a, to: b}]")
	e := buildWith(t, doc, newFake(), graph.Options{})
	host := agenttest.NewHost()
	ctx := event.ContextWithSpan(context.Background(), "trace-1", "span-1")
	before := time.Now()
	_, err := e.Execute(ctx, testRun(), host, nil)
	require.NoError(t, err)
	envs := host.Envelopes()
	require.Len(t, envs, 6, "run start, two steps of two nodes, run end")
	ids := map[string]bool{}
	for _, env := range envs {
		assert.Equal(t, "trace-1", env.TraceID, env.Subject)
		assert.Equal(t, "span-1", env.SpanID, env.Subject)
		assert.Len(t, env.ID, event.IDLen, env.Subject)
		assert.False(t, ids[env.ID], "ids are unique")
		ids[env.ID] = true
		assert.False(t, env.Time.Before(before), env.Subject)
		assert.Equal(t, "run-1", env.Header(event.HeaderRunID), env.Subject)
		assert.Equal(t, "g", env.Header(event.HeaderGraphID), env.Subject)
		require.NoError(t, event.ValidateSubject(env.Subject))
	}
	for i, node := range []string{"a", "a", "b", "b"} {
		env := envs[i+1]
		assert.Equal(t, map[string]string{"run_id": "run-1", "agent_id": "bot", "graph_id": "g"}, env.Headers, "the run's headers: %s", env.Subject)
		assert.Contains(t, env.Subject, ".step."+event.Actor("bot", node)+".", env.Subject)
		var p event.StepPayload
		require.NoError(t, env.Decode(&p))
		assert.Equal(t, node, p.NodeID)
		assert.Equal(t, "g", p.Graph)
	}
	assert.Empty(t, envs[0].Header(event.HeaderNodeID), "run start names no node")
}
