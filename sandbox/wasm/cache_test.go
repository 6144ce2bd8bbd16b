package wasm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// variant is the module bin with a custom section named name first, so
// that each variant is a distinct module that runs like bin.
func variant(bin []byte, name string) []byte {
	out := append([]byte{}, bin[:8]...)
	out = append(out, 0, byte(1+len(name)), byte(len(name)))
	out = append(out, name...)
	return append(out, bin[8:]...)
}

// A Runtime keeps at most MaxModules compiled modules, releasing the
// least recently used ones; a module in use is never released.
func TestCompiledModulesAreBounded(t *testing.T) {
	bin, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wasm", "wat", "ok.wasm"))
	require.NoError(t, err)
	rt, err := New(Options{MaxModules: 3})
	require.NoError(t, err)
	ctx := context.Background()
	held, err := rt.compile(ctx, "held", variant(bin, "held"))
	require.NoError(t, err)
	for i := range 10 {
		require.NoError(t, sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "n",
			Script: sandbox.Script{Module: variant(bin, fmt.Sprint("m", i)), Entry: "run"}}, agent.NewBoard()))
		rt.mu.Lock()
		assert.LessOrEqual(t, len(rt.modules), 3)
		assert.Len(t, rt.order, len(rt.modules))
		assert.Same(t, held, rt.modules[held.key], "a module in use stays")
		rt.mu.Unlock()
	}
	rt.release(held)
	require.NoError(t, sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "n",
		Script: sandbox.Script{Module: variant(bin, "last"), Entry: "run"}}, agent.NewBoard()))
	rt.mu.Lock()
	assert.NotContains(t, rt.modules, held.key, "released once no longer in use")
	rt.mu.Unlock()
	require.NoError(t, rt.Close())
}

func TestMaxModulesIsValidated(t *testing.T) {
	_, err := New(Options{MaxModules: -1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "max_modules")
}
