package demo_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The committed stamp.wasm is what wat2wasm makes of stamp.wat today (go
// generate rebuilds it). The comparison needs wat2wasm (Debian: wabt).
func TestStampWasmIsCurrent(t *testing.T) {
	t.Parallel()
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not installed (Debian: apt-get install wabt)")
	}
	out := filepath.Join(t.TempDir(), "stamp.wasm")
	cmd := exec.Command(tool, filepath.Join("wasm", "stamp.wat"), "-o", out)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join("wasm", "stamp.wasm"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "wasm/stamp.wasm is stale: run go generate ./cmd/corral/internal/demo")
}
