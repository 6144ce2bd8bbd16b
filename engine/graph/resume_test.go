package graph_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An interrupt that arrives while a node runs does not stop it: the
// engine sees it after the wave, records the wave's last node, writes the
// checkpoint and returns Interrupted. A script that polls sees the same
// interrupt.
func TestInterruptAfterWave(t *testing.T) {
	t.Parallel()
	// REF 5.5.1 (interrupts are polled only between waves; a node sees one only through host.checkInterrupt)
	// REF 5.2.4 (poll after the wave, recording the wave's last node)
	// REF 5.5.2 (__interrupted_node, an Interrupted error)
	host := newHost()
	rt := newFake().on("interrupt-me", func(ctx context.Context, inv sandbox.Invocation) error {
		host.Interrupt(agent.Interrupt{Cause: agent.CauseUserInput, Detail: "steer"})
		inv.Board.Vars["finished_anyway"] = true
		return nil
	})
	e := buildWith(t, loadDoc(t, "chain.yaml"), rt, graph.Options{})
	doc := e.Document()
	doc.Nodes[1].Config = []byte(`{"source": "interrupt-me"}`)
	e = buildWith(t, doc, rt, graph.Options{})
	board, err := e.Execute(context.Background(), testRun(), host, nil)
	var ie *agent.InterruptedError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "steer", ie.Interrupt.Detail)
	assert.Equal(t, true, board.Vars["finished_anyway"], "the node ran to its end")
	assert.Equal(t, "b", board.Vars[graph.VarInterruptedNode])
	assert.NotContains(t, board.Vars, "greeting", "c did not run")
	cps := host.Checkpoints()
	require.Len(t, cps, 2, "the interrupted wave still wrote its checkpoint")
	assert.Equal(t, []string{"b"}, cps[1].Steps)
	assert.Equal(t, 2, cps[1].Iteration)
}

// A script that polls host.checkInterrupt() takes the interrupt; the
// engine still sees it, through the run's latch.
func TestInterruptSeenByScriptAndEngine(t *testing.T) {
	t.Parallel()
	// REF 5.5.1 (a node stops early only if it calls host.checkInterrupt())
	host := newHost()
	rt := newFake().on("poll", func(ctx context.Context, inv sandbox.Invocation) error {
		host.Interrupt(agent.Interrupt{Cause: agent.CauseCustom, Detail: "polled"})
		res, err := inv.ABI.Call(ctx, "checkInterrupt", nil)
		require.NoError(t, err)
		assert.JSONEq(t, `{"cause":"custom","detail":"polled"}`, string(res))
		inv.Board.Vars["saw"] = true
		return nil
	})
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: poll}}
  - {id: b, type: script, config: {source: set b 1}}
edges:
  - {from: a, to: b}
`)
	board, err := buildWith(t, doc, rt, graph.Options{}).Execute(context.Background(), testRun(), host, nil)
	assert.ErrorIs(t, err, fault.Interrupted)
	assert.Equal(t, true, board.Vars["saw"])
	assert.Equal(t, "a", board.Vars[graph.VarInterruptedNode])
	assert.NotContains(t, board.Vars, "b")
}

// A node that stops at an interrupt (signal.interrupt, an interrupted
// askUser) fails the run as Interrupted, is named in __interrupted_node
// and is not retried.
func TestNodeInterrupted(t *testing.T) {
	t.Parallel()
	// REF 5.5.2
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: set a 1}}
  - {id: b, type: script, config: {source: stop}}
edges:
  - {from: a, to: b}
`)
	rt := newFake().on("stop", func(context.Context, sandbox.Invocation) error {
		return agent.Interrupted(agent.Interrupt{Cause: agent.CauseCustom, Detail: "signal.interrupt"})
	})
	_, board, err := execute(t, buildWith(t, doc, rt, graph.Options{MaxNodeRetries: 2}), nil)
	var ie *agent.InterruptedError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "signal.interrupt", ie.Interrupt.Detail)
	assert.Equal(t, "b", board.Vars[graph.VarInterruptedNode])
	assert.Len(t, rt.invocations(), 2, "a once, b once: no retry")
}

// Resuming restores the board and the iterations and continues at the
// successors of the checkpoint's steps, with conditions evaluated now.
func TestResume(t *testing.T) {
	t.Parallel()
	// REF 5.5.3 (validate, exec id, CanResume, restore, successors with conditions evaluated now)
	e := buildWith(t, loadDoc(t, "router.yaml"), newFake(), graph.Options{})
	cpBoard := agent.NewBoard()
	cpBoard.Vars["kind"] = "smalltalk"
	cpBoard.Vars[graph.VarInterruptedNode] = "classify"
	run := testRun()
	run.ResumeFrom = &agent.Checkpoint{ExecID: "run-1", Steps: []string{"classify"}, Iteration: 1, Board: cpBoard, SpecVersion: "router"}
	host := newHost()
	stale := agent.NewBoard()
	stale.Vars["stale"] = true
	board, err := e.Execute(context.Background(), run, host, stale)
	require.NoError(t, err)
	assert.NotContains(t, board.Vars, "stale", "the checkpoint's board replaced the one given")
	assert.NotContains(t, board.Vars, graph.VarInterruptedNode, "the interrupted attempt's marker is gone")
	main := board.Channel(agent.MainChannel)
	require.Len(t, main, 1)
	assert.Equal(t, "nice weather", main[0].Text(), "the condition saw the restored board now")
	cps := host.Checkpoints()
	require.Len(t, cps, 1)
	assert.Equal(t, 2, cps[0].Iteration, "iterations continue from the checkpoint")
}

// A resume checkpoint that is invalid, of another run, or that CanResume
// refuses fails the run.
func TestResumeRefused(t *testing.T) {
	t.Parallel()
	// REF 5.5.3 (cp.Validate; exec id == run id; CanResume)
	e := buildWith(t, loadDoc(t, "chain.yaml"), newFake(), graph.Options{MaxIterations: 10})
	good := func() agent.Checkpoint {
		return agent.Checkpoint{ExecID: "run-1", Steps: []string{"a"}, Iteration: 1, Board: agent.NewBoard(), SpecVersion: "1"}
	}
	tests := []struct {
		name   string
		mutate func(*agent.Checkpoint)
		kind   *fault.Kind
		want   string
	}{
		{"no board", func(c *agent.Checkpoint) { c.Board = nil }, fault.Validation, "board is required"},
		{"bad payload", func(c *agent.Checkpoint) { c.Payload = []byte("{") }, fault.Validation, "payload is not valid JSON"},
		{"other run", func(c *agent.Checkpoint) { c.ExecID = "run-2" }, fault.Validation, "forking needs a fresh run"},
		{"spec version", func(c *agent.Checkpoint) { c.SpecVersion = "0" }, fault.NotAvailable, `spec version "0"`},
		{"no steps", func(c *agent.Checkpoint) { c.Steps = nil }, fault.Validation, "has no steps"},
		{"unknown step", func(c *agent.Checkpoint) { c.Steps = []string{"gone"} }, fault.NotAvailable, `step "gone" is not a node`},
		{"iteration", func(c *agent.Checkpoint) { c.Iteration = 11 }, fault.BudgetExceeded, "past max_iterations 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cp := good()
			tt.mutate(&cp)
			run := testRun()
			run.ResumeFrom = &cp
			_, err := e.Execute(context.Background(), run, newHost(), nil)
			assert.ErrorIs(t, err, tt.kind)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	cp := good()
	require.NoError(t, e.CanResume(cp))
	cp.SpecVersion = ""
	assert.NoError(t, e.CanResume(cp), "a checkpoint without a spec version is not checked against it")
	cp.Board = nil
	assert.ErrorIs(t, e.CanResume(cp), fault.Validation)
}

// SuggestCheckpoint does nothing: every wave already writes one.
func TestSuggestCheckpoint(t *testing.T) {
	t.Parallel()
	// REF 5.5.4
	e := buildWith(t, loadDoc(t, "chain.yaml"), newFake(), graph.Options{})
	e.SuggestCheckpoint()
	host, _, err := execute(t, e, nil)
	require.NoError(t, err)
	assert.Len(t, host.Checkpoints(), 3, "one per wave, no more")
}

// A node that runs on after its turn is interrupted (a loop that never
// calls host.checkInterrupt) is stopped once interrupt_grace has passed:
// its writes are dropped, the run ends Interrupted naming it, and no
// checkpoint is written for its wave, so the run parks at its last
// checkpoint and a resume runs the node again, to the end.
func TestInterruptStopsARunningNode(t *testing.T) {
	t.Parallel()
	// REF 5.5.1 (a node still running interrupt_grace after the interrupt is stopped)
	host := newHost()
	var calls atomic.Int32
	var cause error
	rt := newFake().on("spin", func(ctx context.Context, inv sandbox.Invocation) error {
		inv.Board.Vars["half_done"] = true
		if calls.Add(1) == 1 {
			host.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "stop"})
			select { // spins until stopped
			case <-ctx.Done():
			case <-time.After(time.Minute):
			}
			cause = context.Cause(ctx)
			return fault.FromContext(ctx.Err(), "spin")
		}
		inv.Board.Vars["done"] = true
		return nil
	})
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: set a 1}}
  - {id: spin, type: script, config: {source: spin}}
  - {id: c, type: script, config: {source: set c 1}}
edges: [{from: a, to: spin}, {from: spin, to: c}]
`)
	e := buildWith(t, doc, rt, graph.Options{InterruptGrace: 20 * time.Millisecond})
	run := testRun()
	board, err := e.Execute(context.Background(), run, host, nil)
	var ie *agent.InterruptedError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "stop", ie.Interrupt.Detail)
	assert.ErrorIs(t, cause, fault.Interrupted, "the node was stopped by the interrupt")
	assert.Equal(t, "spin", board.Vars[graph.VarInterruptedNode])
	assert.NotContains(t, board.Vars, "half_done", "the stopped node's writes are dropped")
	assert.NotContains(t, board.Vars, "c")
	cps := host.Checkpoints()
	require.Len(t, cps, 1, "only a's wave was checkpointed")
	assert.Equal(t, []string{"a"}, cps[0].Steps)

	run.ResumeFrom = &cps[0]
	board, err = e.Execute(context.Background(), run, newHost(), nil)
	require.NoError(t, err)
	assert.Equal(t, true, board.Vars["done"], "the resume ran the stopped node again")
	assert.Equal(t, 1.0, board.Vars["c"])
}

// A JavaScript node in an endless loop is stopped the same way, and the
// next call on the runtime runs.
func TestInterruptStopsASpinningScript(t *testing.T) {
	t.Parallel()
	rt := newJS(t)
	host := newHost()
	host.SetPublishError(func(_ context.Context, env event.Envelope) error {
		if strings.HasSuffix(env.Subject, ".custom.spinning") {
			host.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}) // the node is running
		}
		return nil
	})
	doc := parseDoc(t, `
name: g
entry: spin
nodes:
  - {id: spin, type: script, config: {source: 'board.setVar("before", 1); host.publish("spinning", {}); for (;;) {}'}}
`)
	e := buildWith(t, doc, rt, graph.Options{InterruptGrace: 10 * time.Millisecond})
	run := testRun()
	run.Capabilities = []string{agent.CapPublish}
	board, err := e.Execute(context.Background(), run, host, nil)
	require.ErrorIs(t, err, fault.Interrupted)
	assert.NotErrorIs(t, err, fault.Timeout, "stopped by the interrupt, not the wall time")
	assert.Equal(t, "spin", board.Vars[graph.VarInterruptedNode])
	assert.NotContains(t, board.Vars, "before")
	require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "next", Script: sandbox.Script{Source: `1`}}, nil))
}

// An interrupt that comes as a long wave ends (past the delay after which
// the engine waits for interrupts on a goroutine) is never lost: the wave
// boundary sees it, whoever took it from the host's channel. Repeated, as
// the race it guards against is narrow.
func TestInterruptAtTheEndOfALongWaveIsNeverLost(t *testing.T) {
	t.Parallel()
	for i := range 50 {
		host := newHost()
		rt := newFake().on("interrupt-me", func(ctx context.Context, inv sandbox.Invocation) error {
			time.Sleep(time.Duration(i%5) * 200 * time.Microsecond)
			host.Interrupt(agent.Interrupt{Cause: agent.CauseUserInput, Detail: "late"})
			return nil
		})
		doc := loadDoc(t, "chain.yaml")
		doc.Nodes[1].Config = []byte(`{"source": "interrupt-me"}`)
		e := buildWith(t, doc, rt, graph.Options{})
		board, err := e.Execute(context.Background(), testRun(), host, nil)
		var ie *agent.InterruptedError
		require.ErrorAs(t, err, &ie, "run %d", i)
		assert.Equal(t, "b", board.Vars[graph.VarInterruptedNode], "run %d", i)
		assert.NotContains(t, board.Vars, "greeting", "run %d: c did not run", i)
	}
}
