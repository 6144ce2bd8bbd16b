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

// invokeTenant runs src as a call of tenant and returns the VM it ran in,
// found as the one pooled after it (PoolSize 1: the only one).
func invokeTenant(t *testing.T, rt *Runtime, tenant, src string) *call {
	t.Helper()
	inv := sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: src}, Run: sandbox.RunInfo{Tenant: tenant}}
	require.NoError(t, sandbox.InvokeOn(context.Background(), rt, inv, agent.NewBoard()))
	rt.realms.mu.Lock()
	defer rt.realms.mu.Unlock()
	require.Len(t, rt.realms.idle, 1)
	return rt.realms.idle[0]
}

// Tenants never share a VM pool slot: a VM that ran a call of tenant A is
// never handed to tenant B, nor to an evaluation of B; with one tenant the
// same VM runs call after call.
func TestPoolNeverHandsAVMToAnotherTenant(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	a1 := invokeTenant(t, rt, "a", "board.x = 1")
	require.Same(t, a1, invokeTenant(t, rt, "a", "board.x = 2"), "one tenant: the same VM")
	require.Equal(t, "a", a1.tenant)
	b := invokeTenant(t, rt, "b", "board.x = 3")
	require.NotSame(t, a1, b, "tenant b got tenant a's VM")
	require.Equal(t, "b", b.tenant)
	a2 := invokeTenant(t, rt, "a", "board.x = 4")
	require.NotSame(t, b, a2, "tenant a got tenant b's VM")
	require.NotSame(t, a1, a2, "a's VM was dropped for b's: a new one")
	_, err = rt.Eval(context.Background(), sandbox.Evaluation{Expr: "1 + 1", Tenant: "b"})
	require.NoError(t, err)
	rt.realms.mu.Lock()
	got := rt.realms.idle[0]
	rt.realms.mu.Unlock()
	require.NotSame(t, a2, got, "an evaluation of tenant b ran in tenant a's VM")
	require.Equal(t, "b", got.tenant)
}

// A full pool keeps the VMs of one tenant and takes a VM of another in
// place of the longest-waiting VM of a tenant other than its own.
func TestRealmPoolSharesItsBoundAcrossTenants(t *testing.T) {
	t.Parallel()
	p := newRealmPool(2)
	a1, a2, b := &call{tenant: "a"}, &call{tenant: "a"}, &call{tenant: "b"}
	kept, _ := p.put(a1)
	require.True(t, kept)
	kept, _ = p.put(a2)
	require.True(t, kept)
	kept, evicted := p.put(&call{tenant: "a"})
	require.False(t, kept, "full of a's VMs")
	require.Nil(t, evicted)
	kept, evicted = p.put(b)
	require.True(t, kept)
	require.Same(t, a1, evicted)
	require.Nil(t, p.get("c"))
	require.Same(t, b, p.get("b"))
	require.Same(t, a2, p.get("a"), "a1, the longest waiting, was dropped")
	require.Nil(t, p.get("a"))
}
