package wasm_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every .wat module of testdata/wasm/wat is committed with its compiled
// .wasm, and the .wasm is what wat2wasm makes of the .wat today (go
// generate rebuilds them). The comparison needs wat2wasm (Debian: wabt).
func TestWatModulesCurrent(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "wasm", "wat")
	wats, err := filepath.Glob(filepath.Join(dir, "*.wat"))
	require.NoError(t, err)
	require.NotEmpty(t, wats)
	for _, w := range wats {
		_, err := os.Stat(strings.TrimSuffix(w, ".wat") + ".wasm")
		assert.NoError(t, err, "%s has no compiled module: run go generate ./sandbox/wasm", w)
	}
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not installed (Debian: apt-get install wabt)")
	}
	out := t.TempDir()
	for _, w := range wats {
		name := strings.TrimSuffix(filepath.Base(w), ".wat")
		fresh := filepath.Join(out, name+".wasm")
		msg, err := exec.Command(tool, w, "-o", fresh).CombinedOutput()
		require.NoError(t, err, "%s", msg)
		want, err := os.ReadFile(fresh)
		require.NoError(t, err)
		got, err := os.ReadFile(strings.TrimSuffix(w, ".wat") + ".wasm")
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "%s.wasm is stale: run go generate ./sandbox/wasm", name)
	}
}
