package proc_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 9.M11
// A node of a chain in process isolation crosses to its worker once: the
// invoke and its result, no host call, no evaluation, nothing else
// (docs/sandbox.md, "Cost": the wakeups of a round trip are most of what
// a call costs, so each one counts).
func TestChainRoundTrips(t *testing.T) {
	e, run := startedChain(t, newProcessJS(t, ""))
	c, stop := proc.CountFrames()
	defer stop()
	_, err := e.Execute(context.Background(), run, agent.NoopHost{}, agent.NewBoard())
	require.NoError(t, err)
	got := c.Snapshot()
	delete(got, "to-worker start") // a spare the keeper starts meanwhile
	delete(got, "from-worker ready")
	assert.Equal(t, map[string]int{"to-worker invoke": 10, "from-worker result": 10}, got)
}

// REF 9.M11
// A node whose outgoing edge has a condition crosses twice: its invoke,
// then the condition's evaluation; each host call a script makes crosses
// once more.
func TestChainRoundTripsWithConditionsAndHostCalls(t *testing.T) {
	rt := newProcessJS(t, "")
	doc := chainDoc(10, `board.setVar("x", 1); host.checkInterrupt()`)
	for i := range doc.Edges {
		doc.Edges[i].Condition = "x == 1"
	}
	e, err := graph.Build(context.Background(), doc,
		graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	run := agent.Run{ID: "run-count", AgentID: "count", Attempt: 1}
	_, err = e.Execute(context.Background(), run, agent.NoopHost{}, agent.NewBoard())
	require.NoError(t, err)
	c, stop := proc.CountFrames()
	defer stop()
	_, err = e.Execute(context.Background(), run, agent.NoopHost{}, agent.NewBoard())
	require.NoError(t, err)
	got := c.Snapshot()
	delete(got, "to-worker start")
	delete(got, "from-worker ready")
	assert.Equal(t, map[string]int{
		"to-worker invoke": 10, "to-worker eval": 9, "to-worker hostReply": 10,
		"from-worker host": 10, "from-worker result": 19,
	}, got)
}
