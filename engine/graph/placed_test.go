package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every deployment of testdata/graph/placed fails to build with an error
// at the value that is wrong: its own file (the graph file, the settings
// file or the deployment), its line and its path, in the document's
// terms (no Go type names), as its golden file records.
func TestPlacedErrorsGolden(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(testdata, "placed")
	files, err := filepath.Glob(filepath.Join(dir, "bad-*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc, err := deploy.ParseFileWithConfig(file, deploy.ParseConfig{Filename: name})
			require.NoError(t, err)
			reg := resource.NewRegistry()
			reg.MustRegister(event.NewFactory(), js.Factory(), graph.Factory())
			app, err := runtime.NewBuilder(reg).Build(context.Background(), doc)
			if err == nil {
				_ = app.Close()
			}
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "json:")
			assert.NotContains(t, err.Error(), "Go struct")
			golden(t, filepath.Join("placed", strings.TrimSuffix(name, ".yaml")+".golden"),
				fault.KindOf(err).String()+"\n"+err.Error()+"\n")
		})
	}
}

// bytesLoader serves the same bytes for every reference, without copying
// them.
type bytesLoader []byte

func (b bytesLoader) Load(context.Context, resource.Source) ([]byte, error) { return b, nil }
func (bytesLoader) Expand(s string) (string, error)                         { return s, nil }

// A graph file over MaxDocumentBytes, from a loader whose own cap is
// larger, is refused before it is converted or decoded: the error names
// the file and the call allocates a small fraction of the document.
func TestOversizedGraphFile(t *testing.T) {
	// Not parallel: the test measures the heap the call allocates.
	var b strings.Builder
	b.WriteString("name: big\nentry: a\nnodes:\n")
	for i := 0; b.Len() < 11<<20; i++ {
		fmt.Fprintf(&b, "  - {id: n%d, type: script, config: {source: 'board.setVar(\"x\", 1)'}}\n", i)
	}
	data := []byte(b.String())
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	_, err := graph.Factory().New(context.Background(), resource.Input{
		Name: "bot", Settings: json.RawMessage(`{"graph": {"file": "big.yaml"}}`), Loader: bytesLoader(data),
	})
	metrics.Read(s)
	grew := s[0].Value.Uint64() - before
	require.Error(t, err)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, fmt.Sprintf("big.yaml: the document is %d bytes, more than the 1048576 allowed", len(data)))
	assert.Less(t, grew, uint64(8<<20), "the factory allocated %d bytes", grew)
}
