package mixed_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/wasm"
	"github.com/corral-rt/corral/sandbox/wasm/wasmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var guests *wasmtest.Builder

func TestMain(m *testing.M) { os.Exit(wasmtest.Main(m, &guests)) }

// setup copies the deployment into a directory with the guest built as
// count.wasm beside it, and builds it.
func setup(t *testing.T) *runtime.Runtime {
	t.Helper()
	dir := t.TempDir()
	doc, err := os.ReadFile("deploy.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.yaml"), doc, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "count.wasm"), guests.Build(t, "examples/mixed/guest"), 0o644))
	parsed, err := deploy.ParseFile(filepath.Join(dir, "deploy.yaml"))
	require.NoError(t, err)
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), js.Factory(), wasm.Factory(), graph.Factory())
	// The default loader: the module loads under the module cap.
	app, err := runtime.NewBuilder(reg).Build(context.Background(), parsed)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	return app
}

// A turn runs the JavaScript node, the WebAssembly node and the
// JavaScript node again, and the answer has the count the guest made.
func TestMixedDeploymentRuns(t *testing.T) {
	app := setup(t)
	for i, tc := range []struct{ text, want string }{
		{"count these four words", "Your message has 4 words."},
		{"and now two", "Your message has 3 words."},
	} {
		lease, err := app.Sessions().Open(context.Background(), session.Key{AgentID: "counter", ContextID: "c" + string(rune('0'+i))})
		require.NoError(t, err)
		turn, err := lease.Session().Start(context.Background(),
			agent.Request{Message: message.NewTextMessage(message.RoleUser, tc.text)})
		require.NoError(t, err)
		res, err := turn.Wait(context.Background())
		require.NoError(t, err)
		require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
		require.NotEmpty(t, res.Output)
		assert.Equal(t, tc.want, res.Output[len(res.Output)-1].Text())
		lease.Close()
	}
}
