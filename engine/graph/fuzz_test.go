package graph_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParseGraph checks that Parse, Validate and Build never panic, that
// their errors are of kind Validation, and that a parsed document
// round-trips through its JSON form.
func FuzzParseGraph(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(testdata, "*.yaml"))
	require.NoError(f, err)
	for _, file := range append(files, filepath.Join(testdata, "graph.json")) {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(`{"name":"g","entry":"a","nodes":[{"id":"a","type":"script","config":{"source":"x"}}]}`))
	f.Add([]byte("name: [\n"))
	rt := newFake()
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := graph.Parse(data)
		if err != nil {
			assert.ErrorIs(t, err, fault.Validation)
			return
		}
		raw, err := json.Marshal(doc)
		require.NoError(t, err)
		again, err := graph.Parse(raw)
		require.NoError(t, err, "%s", raw)
		assert.Equal(t, normalize(doc), normalize(again))
		if doc.Validate() != nil {
			return
		}
		_, err = graph.Build(context.Background(), doc, graph.Options{Runtimes: map[string]sandbox.Runtime{"js": rt}})
		if err != nil && !fault.Is(err, fault.Validation) && !fault.Is(err, fault.NotAvailable) {
			t.Fatalf("build: %v", err)
		}
	})
}

// normalize compacts node configs so that equal JSON compares equal.
func normalize(d *graph.Document) *graph.Document {
	out := *d
	out.Nodes = append([]graph.Node(nil), d.Nodes...)
	for i, n := range out.Nodes {
		if len(n.Config) > 0 {
			var v any
			if json.Unmarshal(n.Config, &v) == nil {
				out.Nodes[i].Config, _ = json.Marshal(v)
			}
		}
	}
	return &out
}
