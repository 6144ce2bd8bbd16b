package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/graph")

// testdata is the directory of graph fixtures.
const testdata = "../../testdata/graph"

// loadDoc parses testdata/graph/<name>.
func loadDoc(t testing.TB, name string) *graph.Document {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdata, name))
	require.NoError(t, err)
	doc, err := graph.Parse(data)
	require.NoError(t, err)
	return doc
}

// parseDoc parses an inline document.
func parseDoc(t testing.TB, src string) *graph.Document {
	t.Helper()
	doc, err := graph.Parse([]byte(src))
	require.NoError(t, err)
	return doc
}

// buildWith builds doc with rt bound as "js" and the given options.
func buildWith(t testing.TB, doc *graph.Document, rt sandbox.Runtime, opts graph.Options) *graph.Engine {
	t.Helper()
	if opts.Runtimes == nil && rt != nil {
		opts.Runtimes = map[string]sandbox.Runtime{"js": rt}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = time.Millisecond
	}
	e, err := graph.Build(context.Background(), doc, opts)
	require.NoError(t, err)
	return e
}

// testRun is the run every executor test uses.
func testRun() agent.Run {
	return agent.Run{ID: "run-1", AgentID: "bot", ContextID: "ctx-1", Attempt: 1}
}

// execute runs e once on an empty board with a fresh recording host.
func execute(t testing.TB, e *graph.Engine, board *agent.Board) (*agenttest.Host, *agent.Board, error) {
	t.Helper()
	host := agenttest.NewHost()
	if board == nil {
		board = agent.NewBoard()
	}
	out, err := e.Execute(context.Background(), testRun(), host, board)
	return host, out, err
}

// transcript renders what a run published, one envelope a line (subject,
// the node_id header when set, payload), then its checkpoints and final
// board vars.
func transcript(t testing.TB, host *agenttest.Host, board *agent.Board, runErr error) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# events\n")
	for _, env := range host.Envelopes() {
		b.WriteString(env.Subject)
		if n := env.Header(event.HeaderNodeID); n != "" {
			fmt.Fprintf(&b, " [%s]", n)
		}
		fmt.Fprintf(&b, " %s\n", env.Payload)
	}
	b.WriteString("# checkpoints\n")
	for _, cp := range host.Checkpoints() {
		vars, err := json.Marshal(cp.Board.Vars)
		require.NoError(t, err)
		fmt.Fprintf(&b, "steps=%v iteration=%d spec=%s vars=%s\n", cp.Steps, cp.Iteration, cp.SpecVersion, vars)
	}
	b.WriteString("# board\n")
	vars, err := json.Marshal(board.Vars)
	require.NoError(t, err)
	fmt.Fprintf(&b, "vars=%s\n", vars)
	for _, name := range slices.Sorted(maps.Keys(board.Channels)) {
		for _, m := range board.Channels[name] {
			fmt.Fprintf(&b, "%s: %s: %s\n", name, m.Role, m.Text())
		}
	}
	b.WriteString("# error\n")
	if runErr != nil {
		fmt.Fprintf(&b, "%v\n", runErr)
	}
	return b.String()
}

// golden compares got with testdata/graph/<name>, rewriting the file
// under -update.
func golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join(testdata, name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run the test with -update to create %s", path)
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs from the run (rerun with -update to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// subjects returns the subjects host saw.
func subjects(host *agenttest.Host) []string { return host.Subjects() }

// deltas decodes the stream deltas host saw, with their subjects.
func deltas(t testing.TB, host *agenttest.Host) []event.StreamDeltaPayload {
	t.Helper()
	var out []event.StreamDeltaPayload
	for _, env := range host.Envelopes() {
		if event.IsStreamDelta(env.Subject) {
			var d event.StreamDeltaPayload
			require.NoError(t, env.Decode(&d))
			out = append(out, d)
		}
	}
	return out
}

// newHost returns a recording host.
func newHost() *agenttest.Host { return agenttest.NewHost() }

// userMessage returns a user text message.
func userMessage(text string) message.Message { return message.NewTextMessage(message.RoleUser, text) }
