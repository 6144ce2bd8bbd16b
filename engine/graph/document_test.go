package graph_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The same graph written as JSON and as YAML parses to the same document.
func TestParseJSONAndYAML(t *testing.T) {
	t.Parallel()
	// REF 5.1.1 (JSON or YAML, YAML converted to JSON)
	fromJSON := loadDoc(t, "graph.json")
	fromYAML := parseDoc(t, `
name: json
entry: only
nodes:
  - {id: only, type: script, config: {source: 'set format "json"'}}
edges:
  - {from: only, to: __end__}
`)
	assert.Equal(t, fromJSON, fromYAML)
	require.NoError(t, fromJSON.Validate())
	assert.JSONEq(t, `{"source":"set format \"json\""}`, string(fromJSON.Nodes[0].Config))
}

// A document over 1 MiB is refused.
func TestParseSizeCap(t *testing.T) {
	t.Parallel()
	// REF 5.1.1 (a document is capped at 1 MiB)
	big := "name: big\n# " + strings.Repeat("x", graph.MaxDocumentBytes) + "\n"
	_, err := graph.Parse([]byte(big))
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, "more than the 1048576 allowed")
}

// Every bad-*.yaml fixture fails to parse, validate or build with the
// error recorded in its golden file; every error is a Validation error
// naming the place.
func TestDocumentErrors(t *testing.T) {
	t.Parallel()
	// REF 5.1.2 (structural checks name node ids and edge indexes)
	// REF 5.1.4 (names starting with __ are reserved)
	// REF 5.1.5 (build checks: node types, config keys, conditions)
	files, err := filepath.Glob(filepath.Join(testdata, "bad-*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := buildFile(t, file)
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Validation)
			golden(t, name+".golden", err.Error()+"\n")
		})
	}
}

// buildFile parses, validates and builds file with a fake "js" runtime.
func buildFile(t *testing.T, file string) error {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	doc, err := graph.Parse(data)
	if err != nil {
		return err
	}
	if err := doc.Validate(); err != nil {
		return err
	}
	_, err = graph.Build(context.Background(), doc, graph.Options{Runtimes: map[string]sandbox.Runtime{"js": newFake()}})
	return err
}

// Parse errors are DocumentErrors with the path of the offending value.
func TestParseErrorPaths(t *testing.T) {
	t.Parallel()
	// REF 5.1.1 (strict decoding names the path)
	tests := []struct {
		name, src, path string
	}{
		{"unknown node field", "name: g\nentry: a\nnodes: [{id: a, type: script, confg: {}}]", "nodes[0]"},
		{"edge field type", "name: g\nentry: a\nnodes: [{id: a, type: script}]\nedges: [{from: a, to: [b]}]", "edges[0].to"},
		{"nodes not a list", "name: g\nentry: a\nnodes: {a: 1}", "nodes"},
		{"not an object", "- a\n- b", ""},
		{"repeated key", "name: g\nname: h\n", ""},
		{"skip condition type", "name: g\nentry: a\nnodes: [{id: a, type: script, skip_condition: {}}]", "nodes[0].skip_condition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := graph.Parse([]byte(tt.src))
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Validation)
			var de *graph.DocumentError
			require.True(t, errors.As(err, &de), "%v", err)
			assert.Equal(t, tt.path, de.Path)
		})
	}
}

// Validate reports every problem, each naming its node or edge.
func TestValidateNamesEveryProblem(t *testing.T) {
	t.Parallel()
	// REF 5.1.2
	doc := loadDoc(t, "bad-structure.yaml")
	err := doc.Validate()
	require.Error(t, err)
	var paths []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var de *graph.DocumentError
		require.True(t, errors.As(e, &de))
		paths = append(paths, de.Path)
	}
	assert.Equal(t, []string{"name", "nodes[1].id", "nodes[2].id", "nodes[3].id", "nodes[4].type",
		"entry", "edges[0].from", "edges[1].to", "edges[2].from"}, paths)
	var nilDoc *graph.Document
	assert.ErrorIs(t, nilDoc.Validate(), fault.Validation)
}

// An edge may go to __end__; a node may not be called that.
func TestEndIsReserved(t *testing.T) {
	t.Parallel()
	// REF 5.1.2 (edge to must be a node or __end__)
	// REF 5.1.4 (names starting with __ are reserved for the kernel)
	ok := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script}]\nedges: [{from: a, to: __end__}]")
	require.NoError(t, ok.Validate())
	bad := parseDoc(t, "name: g\nentry: a\nnodes: [{id: a, type: script}, {id: __end__, type: script}]")
	assert.ErrorContains(t, bad.Validate(), `nodes[1].id: "__end__": ids starting with "__" are reserved`)
}

// specVersion is the version, or the name when the version is empty.
func TestSpecVersion(t *testing.T) {
	t.Parallel()
	// REF 5.1.5 (specVersion = version, or name when version is empty)
	assert.Equal(t, "1", loadDoc(t, "chain.yaml").SpecVersion())
	assert.Equal(t, "router", loadDoc(t, "router.yaml").SpecVersion())
}

// WithPathPrefix puts a prefix before the paths of document errors, also
// inside a join.
func TestWithPathPrefix(t *testing.T) {
	t.Parallel()
	err := loadDoc(t, "bad-structure.yaml").Validate()
	got := graph.WithPathPrefix(err, "settings.graph")
	assert.Contains(t, got.Error(), "validate graph: settings.graph.nodes[1].id:")
	assert.Contains(t, got.Error(), "validate graph: settings.graph.name: is required")
	assert.ErrorIs(t, got, fault.Validation)
	plain := errors.New("plain")
	assert.Same(t, plain, graph.WithPathPrefix(plain, "x"))
	assert.NoError(t, graph.WithPathPrefix(nil, "x"))
}
