package replay_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/require"
)

// TestMain lets this test binary host the workers of isolation: process.
func TestMain(m *testing.M) {
	js.ServeWorkerIfChild()
	os.Exit(m.Run())
}

// waitLimit and waitTick bound a wait for a goroutine's work: generous,
// never a measure of speed.
const (
	waitLimit = 60 * time.Second
	waitTick  = 5 * time.Millisecond
)

// encoded is r encoded; the test fails when Encode refuses it.
func encoded(t testing.TB, r *replay.Recording) []byte {
	t.Helper()
	data, err := r.Bytes()
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return data
}

// recordedSession builds doc with a recorder of cfg on every turn and opens
// the session (agentID, "c1"); the runtime and the lease close when the
// test ends.
func recordedSession(t *testing.T, doc *deploy.Document, cfg replay.RecorderConfig, agentID string) (*replay.Recorder, *session.Lease) {
	t.Helper()
	rec := replay.NewRecorder(cfg)
	b := builtin.NewBuilder()
	require.NoError(t, b.WithHostFactory(rec.Decorate))
	rt, err := b.Build(context.Background(), doc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	lease, err := rt.Sessions().Open(context.Background(), session.Key{AgentID: agentID, ContextID: "c1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lease.Close() })
	return rec, lease
}
