package replay_test

import (
	"os"
	"testing"

	"github.com/corral-rt/corral/sandbox/js"
)

// TestMain lets this test binary host the workers of isolation: process.
func TestMain(m *testing.M) {
	js.ServeWorkerIfChild()
	os.Exit(m.Run())
}
