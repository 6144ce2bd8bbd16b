package graph_test

import (
	"context"
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
// measure, and records what the runtime reports after it.
type sizeWitness struct {
	sandbox.Runtime
	sandbox.ExactBoardBytes // it hands the pointer on to the runtime it wraps, and writes nothing itself
	t                       *testing.T

	mu       sync.Mutex
	handed   map[string]int64 // by node: the size handed in, 0 for none
	reported map[string]int64 // by node: the size reported after
}

func (w *sizeWitness) Invoke(ctx context.Context, inv sandbox.Invocation) error {
	measured, err := sandbox.BoardJSONBytes(inv.Board)
	require.NoError(w.t, err)
	if inv.BoardBytes != 0 {
		assert.Equal(w.t, measured, inv.BoardBytes, "size handed to %s", inv.Node)
	}
	err = w.Runtime.Invoke(ctx, inv)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handed[inv.Node] = inv.BoardBytes
	if inv.BoardBytesAfter == nil {
		w.t.Errorf("%s: no BoardBytesAfter for a runtime that declares exact sizes", inv.Node)
	} else {
		w.reported[inv.Node] = *inv.BoardBytesAfter
	}
	return err
}

// A script node's runtime reports the board's size after the node, and
// the engine hands it to the next node and checks max_board_bytes with it
// instead of measuring the board; after a node whose runtime reports
// nothing (or a skipped node) the size is measured (or kept) as before.
// Every size handed to a node is the board's exact measure.
func TestBoardSizeReportedByScriptNodes(t *testing.T) {
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
	w := &sizeWitness{Runtime: newJS(t), t: t, handed: map[string]int64{}, reported: map[string]int64{}}
	w.ExactBoardBytes = sandbox.DeclareExactBoardBytes(w)
	raw := newFake().on("grow", func(_ context.Context, inv sandbox.Invocation) error {
		inv.Board.Vars["grown"] = strings.Repeat("<", 100) // written past any runner's count
		return nil
	})
	e := buildWith(t, doc, nil, graph.Options{Runtimes: map[string]sandbox.Runtime{"js": w, "raw": raw}})
	_, out, err := execute(t, e, nil)
	require.NoError(t, err)
	assert.Contains(t, out.Vars, "grown")

	for _, node := range []string{"a", "c", "e"} {
		assert.NotZero(t, w.reported[node], "the js runtime reports the size after %s", node)
	}
	invs := raw.invocations()
	require.Len(t, invs, 1)
	assert.Nil(t, invs[0].BoardBytesAfter, "a runtime that does not declare exact sizes is not asked for them")
	assert.Equal(t, w.reported["a"], w.handed["c"], "c gets what a reported: the skipped node changed nothing")
	assert.Equal(t, w.reported["c"], invs[0].BoardBytes)
	assert.NotZero(t, w.handed["e"], "after raw the board is measured at the wave's end")
	final, err := sandbox.BoardJSONBytes(out)
	require.NoError(t, err)
	assert.Equal(t, final, w.reported["e"])
}

// skewedSizes reports every board size off by skew: it shows where the
// engine uses a reported size rather than measuring the board.
type skewedSizes struct {
	sandbox.Runtime
	sandbox.ExactBoardBytes // a false declaration, on purpose
	skew                    int64

	mu     sync.Mutex
	handed []int64
}

func (s *skewedSizes) Invoke(ctx context.Context, inv sandbox.Invocation) error {
	s.mu.Lock()
	s.handed = append(s.handed, inv.BoardBytes)
	s.mu.Unlock()
	err := s.Runtime.Invoke(ctx, inv)
	if err == nil && inv.BoardBytesAfter != nil && *inv.BoardBytesAfter > 0 {
		*inv.BoardBytesAfter += s.skew
	}
	return err
}

// The engine takes a script node's reported size as the board's (a
// runtime must report it exactly, sandbox.Invocation.BoardBytesAfter):
// the next node is handed it, unmeasured, and max_board_bytes is checked
// against it.
func TestReportedBoardSizeIsTrusted(t *testing.T) {
	t.Parallel()
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: 'board.setVar(\"x\", 1)'}}, {id: b, type: script, config: {source: 'board.setVar(\"x\", 2)'}}]\nedges: [{from: a, to: b}]")
	s := &skewedSizes{Runtime: newJS(t), skew: 7}
	s.ExactBoardBytes = sandbox.DeclareExactBoardBytes(s)
	_, out, err := execute(t, buildWith(t, doc, s, graph.Options{}), nil)
	require.NoError(t, err)
	measured, err := sandbox.BoardJSONBytes(out)
	require.NoError(t, err)
	assert.Equal(t, []int64{0, measured + 7}, s.handed, "b is handed what a reported")

	s = &skewedSizes{Runtime: newJS(t), skew: 1 << 30}
	s.ExactBoardBytes = sandbox.DeclareExactBoardBytes(s)
	_, _, err = execute(t, buildWith(t, doc, s, graph.Options{}), nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le, "the reported size is past max_board_bytes")
	assert.Equal(t, sandbox.LimitBoardBytes, le.Limit)
	assert.Equal(t, "a", le.Node)
}

// retryOnce wraps a runtime as a user might: it retries a failed call
// once with the same invocation, so the failed call's board writes are
// in no count. It does not declare exact sizes.
type retryOnce struct{ sandbox.Runtime }

func (r retryOnce) Invoke(ctx context.Context, inv sandbox.Invocation) error {
	if err := r.Runtime.Invoke(ctx, inv); err == nil {
		return nil
	}
	return r.Runtime.Invoke(ctx, inv)
}

// retryEmbedded is retryOnce embedding the runtime's own type, which
// does not carry the runtime's declaration over either.
type retryEmbedded struct{ *js.Runtime }

func (r retryEmbedded) Invoke(ctx context.Context, inv sandbox.Invocation) error {
	return retryOnce{r.Runtime}.Invoke(ctx, inv)
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

// Only a size the engine's own script handler gets from a runtime that
// declares exact sizes is trusted: a runtime wrapped without the
// declaration (here one that retries, so the first attempt's writes are
// uncounted) and a Go node type that writes the board after its script
// are measured, and a board past max_board_bytes still fails the run.
func TestUntrustedBoardSizesAreMeasured(t *testing.T) {
	t.Parallel()
	wrappers := map[string]func(rt *js.Runtime) sandbox.Runtime{
		"interface embedded": func(rt *js.Runtime) sandbox.Runtime { return retryOnce{rt} },
		"type embedded":      func(rt *js.Runtime) sandbox.Runtime { return retryEmbedded{rt} },
	}
	for name, wrap := range wrappers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rt := wrap(newJS(t))
			require.False(t, sandbox.ReportsExactBoardBytes(rt), "a wrapper does not inherit the declaration")
			doc := parseDoc(t, `
name: g
entry: a
nodes:
  - {id: a, type: script, config: {source: 'board.setVar("seed", 1)'}}
  - {id: b, type: script, config: {source: 'if (!board.hasVar("first")) { board.setVar("first", "x".repeat(600)); throw new Error("flaky") } board.setVar("second", "y".repeat(600))'}}
edges: [{from: a, to: b}]
`)
			e := buildWith(t, doc, rt, graph.Options{Limits: sandbox.Limits{MaxBoardBytes: 1000}})
			_, _, err := execute(t, e, nil)
			var le *sandbox.LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, sandbox.LimitBoardBytes, le.Limit)
			assert.Equal(t, "b", le.Node)
		})
	}
	t.Run("go node type on a script type", func(t *testing.T) {
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
	})
}

// Building with a runtime whose declaration cannot be read (a wrapper of
// a nil *js.Runtime) does not panic: the runtime is simply not trusted.
func TestBuildWithNilWrappedRuntime(t *testing.T) {
	t.Parallel()
	doc := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script, config: {source: 'board.setVar(\"x\", 1)'}}]")
	assert.NotPanics(t, func() {
		_, _ = graph.Build(context.Background(), doc, graph.Options{Runtimes: map[string]sandbox.Runtime{"js": struct{ *js.Runtime }{}}})
	})
}
