package wasm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/corral-rt/corral/sandbox/wasm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Inside a run begun with BeginRun, a Go guest's instance serves the
// run's calls one after the other, so its package state lives as long as
// the run; outside a run, and in the next run, every call starts fresh. A
// call that fails never leaves its instance to the next one.
func TestGoGuestInstanceLivesForTheRun(t *testing.T) {
	rt, err := wasm.New(wasm.Options{})
	require.NoError(t, err)
	defer rt.Close()
	bin := guests.Build(t, suiteGuest)
	invoke := func(run, entry string) (*agent.Board, error) {
		b := agent.NewBoard()
		err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n",
			Script: sandbox.Script{Module: bin, Entry: entry}, Run: sandbox.RunInfo{RunID: run}}, b)
		return b, err
	}
	seen := func(run string) any {
		b, err := invoke(run, "inspect")
		require.NoError(t, err)
		return b.Vars["seen"].(map[string]any)["polluted"]
	}
	end := rt.BeginRun(context.Background(), sandbox.RunInfo{RunID: "r1"})
	_, err = invoke("r1", "pollute")
	require.NoError(t, err)
	assert.Equal(t, "yes", seen("r1"), "the run's next call shares the instance")
	assert.Equal(t, "no", seen("other"), "a call outside the run starts fresh")
	_, err = invoke("r1", "throw")
	require.Error(t, err)
	assert.Equal(t, "no", seen("r1"), "a failed call's instance is dropped")
	end()
	end()
	assert.Equal(t, "no", seen("r1"), "a new run starts fresh")
}

// Calls of one run in parallel (a parallel wave) get an instance each.
func TestParallelCallsOfARunGetTheirOwnInstance(t *testing.T) {
	rt, err := wasm.New(wasm.Options{})
	require.NoError(t, err)
	defer rt.Close()
	bin := guests.Build(t, suiteGuest)
	defer rt.BeginRun(context.Background(), sandbox.RunInfo{RunID: "r"})()
	var wg sync.WaitGroup
	boards := make([]*agent.Board, 4)
	for i := range boards {
		boards[i] = agent.NewBoard()
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n",
				Script: sandbox.Script{Module: bin, Entry: "concurrent"}, Run: sandbox.RunInfo{RunID: "r"},
				Config: map[string]any{"id": string(rune('a' + i))}}, boards[i]))
		}()
	}
	wg.Wait()
	for i, b := range boards {
		assert.Equal(t, string(rune('a'+i)), b.Vars["who"])
	}
}

// An instance kept for a run is not lent to a call whose memory limit is
// below the memory it already has: that call gets a fresh instance, held
// to its own limit.
// REF 9.M1 (a per-instance memory limit in pages)
func TestRunInstanceHeldToTheNextCallsLimit(t *testing.T) {
	rt, err := wasm.New(wasm.Options{Limits: sandbox.Limits{MemoryBytes: 64 << 20}})
	require.NoError(t, err)
	defer rt.Close()
	bin := watModule(t, "heavy_grow")
	defer rt.BeginRun(context.Background(), sandbox.RunInfo{RunID: "r"})()
	invoke := func(limit int64) error {
		return sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "grower",
			Script: sandbox.Script{Module: bin, Entry: "run"}, Run: sandbox.RunInfo{RunID: "r"},
			Limits: sandbox.Limits{MemoryBytes: limit}}, agent.NewBoard())
	}
	require.NoError(t, invoke(64<<20), "the first call grows to about 60 MiB")
	require.NoError(t, invoke(64<<20), "the run's next call shares the instance")
	sandboxtest.RequireLimit(t, invoke(1<<20), sandbox.LimitMemory, "grower")
	require.NoError(t, invoke(64<<20))
}
