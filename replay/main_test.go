package replay_test

import (
	"os"
	"testing"
	"time"

	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/sandbox/js"
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
