package graph_test

import (
	"context"
	"path/filepath"
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
