package graph_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sizeWitness wraps a runtime and checks, at every call, that the board's
// size the engine hands in (sandbox.Invocation.BoardBytes) is the board's
// measure, and records it by node.
type sizeWitness struct {
	sandbox.Runtime
	t *testing.T

	mu     sync.Mutex
	handed map[string]int64 // by node: the size handed in, 0 for none
}

func (w *sizeWitness) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	measured, err := sandbox.BoardJSONBytes(&inv.Board)
	require.NoError(w.t, err)
	if inv.BoardBytes != 0 {
		assert.Equal(w.t, measured, inv.BoardBytes, "size handed to %s", inv.Node)
	}
	w.mu.Lock()
	w.handed[inv.Node] = inv.BoardBytes
	w.mu.Unlock()
	return w.Runtime.Invoke(ctx, inv)
}

// The engine counts the board's size as it applies a script node's
// writes, and hands it to the next node and checks max_board_bytes with
// it instead of measuring the board, whatever runtime ran the node (the
// fake here reports nothing of sizes); a skipped node keeps it. Every size
// handed to a node is the board's exact measure.
func TestBoardSizeCountedFromWrites(t *testing.T) {
	t.Parallel()
	doc := parseDoc(t, `
name: sizes
entry: a
nodes:
  - {id: a, type: script, config: {source: 'board.setVar("a<b", "x&y\u2028"); board.appendChannel("chat", [{role: "user", parts: [{type: "text", text: "hi"}]}])'}}
  - {id: skipped, type: script, skip_condition: 'true', config: {source: 'board.setVar("never", 1)'}}
  - {id: c, type: script, config: {source: 'board.deleteVar("a<b"); board.setChannel("chat", []); board.setVar("n", -0.5)'}}
  - {id: raw, type: script, config: {runtime: raw, source: grow}}
  - {id: e, type: script, config: {source: 'board.setVar("n", 1e21)'}}
edges: [{from: a, to: skipped}, {from: skipped, to: c}, {from: c, to: raw}, {from: raw, to: e}]
`)
	w := &sizeWitness{Runtime: newJS(t), t: t, handed: map[string]int64{}}
	raw := newFake().on("grow", func(_ context.Context, inv sandbox.Invocation) error {
		inv.Board.Vars["grown"] = strings.Repeat("<", 100)
		return nil
	})
	e := buildWith(t, doc, nil, graph.Options{Runtimes: map[string]sandbox.Runtime{"js": w, "raw": raw}})
	_, out, err := execute(t, e, nil)
	require.NoError(t, err)
	assert.Contains(t, out.Vars, "grown")

	invs := raw.invocations()
	require.Len(t, invs, 1)
	assert.Zero(t, w.handed["a"], "the first node: the engine has not measured the board yet")
	assert.NotZero(t, w.handed["c"], "c gets the size counted from a's writes: the skipped node changed nothing")
	assert.NotZero(t, invs[0].BoardBytes, "raw gets the size counted from c's writes")
	assert.NotZero(t, w.handed["e"], "e gets the size counted from raw's writes")
}

// doubled is a runtime wrapper that runs every call twice and returns the
// writes of both: the engine applies what the outcome says, and counts
// the board from it, whatever the runner counted (half of it here).
type doubled struct{ sandbox.Runtime }

func (d doubled) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	first, err := d.Runtime.Invoke(ctx, inv)
	if err != nil {
		return first, err
	}
	second, err := d.Runtime.Invoke(ctx, inv)
	second.Writes = append(first.Writes, second.Writes...)
	return second, err
}

// retryOnce wraps a runtime as a user might: it retries a failed call
// once with the same invocation and returns the last outcome, so the
// failed call's writes are never applied.
type retryOnce struct{ sandbox.Runtime }

func (r retryOnce) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	if out, err := r.Runtime.Invoke(ctx, inv); err == nil {
		return out, nil
	}
	return r.Runtime.Invoke(ctx, inv)
}

// retryEmbedded is retryOnce embedding the runtime's own type.
type retryEmbedded struct{ *js.Runtime }

func (r retryEmbedded) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	return retryOnce{r.Runtime}.Invoke(ctx, inv)
}

// A wrapper's outcome is what the engine applies and counts: the writes of
// both calls of a doubling wrapper pass max_board_bytes (each alone would
// not), and a retrying wrapper's last outcome is the board's, not the
// failed attempt's.
func TestWrappedRuntimesAreCountedFromTheirOutcome(t *testing.T) {
	t.Parallel()
	doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: 'board.setVar("seed", 1)'}}
  - {id: b, type: script, config: {source: 'board.appendChannel("log", {role: "user", parts: [{type: "text", text: "y".repeat(600)}]})'}}
edges: [{from: a, to: b}]
`)
	e := buildWith(t, doc, doubled{newJS(t)}, graph.Options{Limits: sandbox.Limits{MaxBoardBytes: 1000}})
	_, _, err := execute(t, e, nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitBoardBytes, le.Limit)
	assert.Equal(t, "b", le.Node)

	wrappers := map[string]func(rt *js.Runtime) sandbox.Runtime{
		"interface embedded": func(rt *js.Runtime) sandbox.Runtime { return retryOnce{rt} },
		"type embedded":      func(rt *js.Runtime) sandbox.Runtime { return retryEmbedded{rt} },
	}
	for name, wrap := range wrappers {
		doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: 'board.setVar("seed", 1)'}}
  - {id: b, type: script, config: {source: 'board.setVar("attempt", (board.getVar("attempt") || 0) + 1); board.setVar("big", "x".repeat(600)); if (board.getVar("attempt") < 2) throw new Error("flaky")'}}
edges: [{from: a, to: b}]
`)
		e := buildWith(t, doc, wrap(newJS(t)), graph.Options{Limits: sandbox.Limits{MaxBoardBytes: 1000}})
		_, _, err := execute(t, e, nil)
		require.Error(t, err, name)
		assert.False(t, errors.As(err, &le), "%s: the failed attempt's writes are not on the board: %v", name, err)
	}
}

// enrichedType is a Go node type built on a script node type: it runs the
// script and then writes a var of its own.
type enrichedType struct{ inner *graph.ScriptNodeType }

func (enrichedType) Name() string { return "enriched" }

func (t enrichedType) Build(ctx context.Context, in graph.NodeInput) (graph.Handler, error) {
	h, err := t.inner.Build(ctx, in)
	if err != nil {
		return nil, err
	}
	return enrichedHandler{h}, nil
}

type enrichedHandler struct{ inner graph.Handler }

func (h enrichedHandler) Run(ctx context.Context, c *graph.Call) error {
	if err := h.inner.Run(ctx, c); err != nil {
		return err
	}
	c.Board.Vars["audit"] = strings.Repeat("z", 2000)
	return nil
}

// A Go node type that writes the board after its script is measured, not
// counted from the script's writes: a board past max_board_bytes still
// fails the run.
func TestGoNodeTypeOnAScriptTypeIsMeasured(t *testing.T) {
	t.Parallel()
	rt := newJS(t)
	inner, err := graph.NewScriptNodeType(graph.ScriptNodeTypeConfig{Type: "inner", Source: `board.setVar("x", 1)`, Runtime: rt})
	require.NoError(t, err)
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: enriched}]")
	e := buildWith(t, doc, rt, graph.Options{NodeTypes: []graph.NodeType{enrichedType{inner}}, Limits: sandbox.Limits{MaxBoardBytes: 1000}})
	_, _, err = execute(t, e, nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitBoardBytes, le.Limit)
	assert.Equal(t, "a", le.Node)
}

// Building with a wrapper of a nil *js.Runtime does not panic.
func TestBuildWithNilWrappedRuntime(t *testing.T) {
	t.Parallel()
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: 'board.setVar(\"x\", 1)'}}]")
	assert.NotPanics(t, func() {
		_, _ = graph.Build(context.Background(), doc, graph.Options{Runtimes: map[string]sandbox.Runtime{"js": struct{ *js.Runtime }{}}})
	})
}
