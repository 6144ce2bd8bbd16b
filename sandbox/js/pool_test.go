package js

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitSpare waits until rt holds a spare VM and returns it, leaving it
// there.
func waitSpare(t *testing.T, rt *Runtime) *call {
	t.Helper()
	require.Eventually(t, func() bool { return len(rt.spares) == 1 }, 30*time.Second, time.Millisecond)
	c := <-rt.spares
	rt.spares <- c
	return c
}

func invokeSrc(t *testing.T, rt *Runtime, src string) error {
	t.Helper()
	return sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: src}}, agent.NewBoard())
}

// A dropped VM is replaced ahead: the next call runs on the spare the
// runtime prepared meanwhile.
func TestSpareReplacesDroppedVM(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	require.NoError(t, invokeSrc(t, rt, `signal.done()`))
	assert.Zero(t, rt.realms.len())
	spare := waitSpare(t, rt)
	require.NoError(t, invokeSrc(t, rt, `board.setVar("x", 1)`))
	assert.Empty(t, rt.spares)
	assert.Same(t, spare, pooled(t, rt))
}

// A VM asks for its replacement when it has run half its calls, and
// goes on running until realmUses.
func TestSpareAskedAtHalfUses(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	require.NoError(t, invokeSrc(t, rt, `1`))
	vm := pooled(t, rt)
	assert.Empty(t, rt.spares)
	vm.uses = realmUses/2 - 1
	require.NoError(t, invokeSrc(t, rt, `1`))
	spare := waitSpare(t, rt)
	assert.Same(t, vm, pooled(t, rt), "the VM runs on")
	vm.uses = realmUses - 1
	require.NoError(t, invokeSrc(t, rt, `1`))
	assert.Zero(t, rt.realms.len(), "dropped after realmUses calls")
	require.NoError(t, invokeSrc(t, rt, `1`))
	assert.Same(t, spare, pooled(t, rt))
}

// Close stops the preparer, even while it prepares, and drops the
// spares; a second Close is harmless.
func TestCloseStopsPreparer(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 2})
	require.NoError(t, err)
	require.NoError(t, invokeSrc(t, rt, `signal.done()`))
	rt.wantSpare()
	require.NoError(t, rt.Close())
	select {
	case <-rt.preparerDone:
	default:
		t.Fatal("the preparer still runs after Close")
	}
	assert.Empty(t, rt.spares)
	assert.Zero(t, rt.realms.len())
	require.NoError(t, rt.Close())
	assert.Error(t, invokeSrc(t, rt, `1`))
}

// Symbol.for keeps its meaning, and a VM whose calls gave it more than
// maxSymbolKeyBytes of keys is dropped: its registry does not grow
// without bound across calls.
func TestSymbolRegistryBounded(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	b := agent.NewBoard()
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `
		board.setVar("same", Symbol.for("a") === Symbol.for("a") && Symbol.for(1) === Symbol.for("1"));
		board.setVar("key", Symbol.keyFor(Symbol.for("k")));
		board.setVar("apart", Symbol.for("a") !== Symbol("a"));`}}, b)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"same": true, "key": "k", "apart": true}, b.Vars)
	vm := pooled(t, rt)
	assert.Positive(t, vm.symbolKeyBytes)

	flood := `const k = "k".repeat(16384); for (let i = 0; i < 16; i++) { Symbol.for(k + i) }`
	require.NoError(t, invokeSrc(t, rt, flood))
	assert.Same(t, vm, pooled(t, rt), "under the budget the VM is kept")
	for range 4 {
		if rt.realms.len() == 0 {
			break
		}
		require.NoError(t, invokeSrc(t, rt, flood))
	}
	assert.Zero(t, rt.realms.len(), "past the budget the VM is dropped")
	assert.Greater(t, vm.symbolKeyBytes, int64(maxSymbolKeyBytes))
}
