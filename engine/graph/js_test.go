package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newJS returns a goja runtime closed at the end of the test.
func newJS(t testing.TB) *js.Runtime {
	t.Helper()
	rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: 5 * time.Second}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

const jsLoop = `
name: counter
entry: tick
nodes:
  - id: tick
    type: script
    config:
      source: |
        const n = (board.getVar("n") || 0) + config.step;
        board.setVar("n", n);
        host.emit("token", "tick " + n + ";");
      config: {step: "${board.step:1}"}
  - id: report
    type: script
    skip_condition: quiet === true
    config:
      source: |
        board.appendChannel(board.MAIN_CHANNEL, {role: "assistant", parts: [{type: "text", text: "counted to " + board.getVar("n")}]});
edges:
  - {from: tick, to: tick, condition: n < limit}
  - {from: tick, to: report, condition: n >= limit && __iterations > 0}
`

// With the goja runtime: script nodes read their resolved config and the
// board, emit deltas through the host ABI, conditions route over the board
// vars (a var that is not set reads as undefined) and skip conditions skip.
func TestJSRun(t *testing.T) {
	t.Parallel()
	// REF 5.3.3 (script nodes in the sandbox runtime)
	// REF 5.2.4 (conditions are evaluated in the sandbox over the board vars plus __iterations)
	// REF 5.2.6 (config references resolve before the script sees config)
	e := buildWith(t, parseDoc(t, jsLoop), newJS(t), graph.Options{})
	board := agent.NewBoard()
	board.Vars["limit"], board.Vars["step"] = 3, 1
	host, out, err := execute(t, e, board)
	require.NoError(t, err)
	assert.EqualValues(t, 3, out.Vars["n"])
	main := out.Channel(agent.MainChannel)
	require.Len(t, main, 1)
	assert.Equal(t, "counted to 3", main[0].Text())
	var text string
	for _, d := range deltas(t, host) {
		text += d.Part.Text
	}
	assert.Equal(t, "tick 1;tick 2;tick 3;", text)

	board = agent.NewBoard()
	board.Vars["limit"], board.Vars["step"], board.Vars["quiet"] = 4, 2, true
	_, out, err = execute(t, e, board)
	require.NoError(t, err)
	assert.EqualValues(t, 4, out.Vars["n"])
	assert.Empty(t, out.Channel(agent.MainChannel), "report was skipped")
}

// Build has the goja runtime compile every condition without running it:
// a syntax error fails the build naming the place, and a condition that
// would throw at run time does not.
func TestJSConditionSyntax(t *testing.T) {
	t.Parallel()
	// REF 5.1.5 (conditions and skip conditions are compiled at Build; Validation on error)
	rt := newJS(t)
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: "board.setVar('x', 1)"}, skip_condition: "items.length > 0"}
edges:
  - {from: a, to: __end__, condition: "x ==="}
`)
	_, err := graph.Build(context.Background(), doc, graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt}})
	require.Error(t, err)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, "build graph: edges[0].condition: edge a -> __end__: does not compile")
	assert.NotContains(t, err.Error(), "nodes[0]", "a skip condition that would throw is not run at Build")

	doc.Edges[0].Condition = "x === 1"
	e := buildWith(t, doc, rt, graph.Options{})
	_, _, err = execute(t, e, nil)
	assert.ErrorContains(t, err, `nodes[0].skip_condition: node "a"`, "at run time it throws, naming the node")
	assert.ErrorContains(t, err, "length")
}

// A script that throws or signals an error fails its node with that kind.
func TestJSScriptErrors(t *testing.T) {
	t.Parallel()
	// REF 5.3.3 (errors of a script name its node)
	rt := newJS(t)
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: 'signal.error({kind: "not_found", message: "no such order"})'}}
`)
	_, _, err := execute(t, buildWith(t, doc, rt, graph.Options{}), nil)
	assert.ErrorIs(t, err, fault.NotFound)
	assert.ErrorContains(t, err, `graph "g": node "a"`)
	assert.ErrorContains(t, err, "no such order")
}

// Parallel branches in goja: their emitted deltas are speculative, and
// their board writes merge.
func TestJSParallel(t *testing.T) {
	t.Parallel()
	// REF 5.6.3 (each branch's deltas are speculative with fork_id and branch_id)
	// REF 5.6.6 (merge)
	doc := parseDoc(t, `
name: fan
entry: start
nodes:
  - {id: start, type: script, config: {source: "board.setVar('started', true)"}}
  - {id: left, type: script, config: {source: "board.setVar('left', 1); host.emit('token', 'L')"}}
  - {id: right, type: script, config: {source: "board.setVar('right', 2); host.emit('token', 'R')"}}
edges:
  - {from: start, to: left}
  - {from: start, to: right}
`)
	e := buildWith(t, doc, newJS(t), graph.Options{Parallel: graph.ParallelOptions{Enabled: true}})
	host, out, err := execute(t, e, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 1, out.Vars["left"])
	assert.EqualValues(t, 2, out.Vars["right"])
	var spec int
	for _, d := range deltas(t, host) {
		require.NoError(t, d.Validate())
		if d.Speculative {
			spec++
			assert.Equal(t, "run-1#attempt-1#iteration-1#left", d.ForkID)
		}
	}
	assert.Equal(t, 2, spec)
}
