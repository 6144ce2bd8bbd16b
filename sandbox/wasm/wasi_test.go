package wasm_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/corral-rt/corral/sandbox/wasm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Go guest's WASI clock and random source are the host's deterministic
// ones: two runs with one seed leave identical boards and journals, its
// time.Now is the host clock, its sleeps move only its own clock, and
// another seed gives other random numbers. Without the clock and random
// grants the guest still runs, deterministically.
// REF 9.M3 (the guest reaches nothing but the host: its WASI clock and random are the host's)
func TestWASIClockAndRandomAreTheHosts(t *testing.T) {
	env := &sandboxtest.Env{Runtime: newRuntime(t), Programs: sandboxtest.Programs{
		"wasi": sandbox.Script{Module: guests.Build(t, suiteGuest), Entry: "wasi"}}}
	run := func(seed uint64, grants []string) sandboxtest.Result {
		res := env.Invoke(t, sandboxtest.Call{Program: "wasi", Host: sandboxtest.NewHost(seed), Grants: grants})
		require.NoError(t, res.Err)
		return res
	}
	first, second := run(7, nil), run(7, nil)
	assert.Equal(t, first.Board, second.Board)
	assert.Equal(t, first.Journal.Entries(), second.Journal.Entries())
	assert.Equal(t, float64(sandboxtest.Epoch().UnixMilli()), sandboxtest.Var(t, first, "now"), "time.Now reads the host clock")
	assert.Equal(t, true, sandboxtest.Var(t, first, "slept"))
	assert.Equal(t, float64(0), sandboxtest.Var(t, first, "offset"), "local time is UTC")
	funcs := map[string]bool{}
	for _, e := range first.Journal.Entries() {
		funcs[e.Func] = true
	}
	assert.True(t, funcs[hostabi.FuncNow] && funcs[hostabi.FuncRandom], "the clock and the seed are journaled: %v", funcs)
	other := run(8, nil)
	assert.NotEqual(t, sandboxtest.Var(t, first, "crypto"), sandboxtest.Var(t, other, "crypto"))
	assert.NotEqual(t, sandboxtest.Var(t, first, "math"), sandboxtest.Var(t, other, "math"))
	bare1, bare2 := run(7, []string{}), run(9, []string{})
	assert.Equal(t, bare1.Board, bare2.Board, "without grants the guest is deterministic whatever the host")
	assert.Equal(t, float64(0), sandboxtest.Var(t, bare1, "now"), "without the clock grant the wall clock is the epoch")
	assert.Empty(t, bare1.Journal.Entries())
}

// A guest reading the WASI realtime clock in a loop costs one journaled
// host.now per call, not one per reading: the host's clock is read once
// and later readings move with the guest's monotonic clock.
// REF 9.M3 (the guest's WASI clock is the host's)
func TestWASIClockLoopJournalsOneReading(t *testing.T) {
	rt, err := wasm.New(wasm.Options{Limits: sandbox.Limits{WallTime: 500 * time.Millisecond, MemoryBytes: 1 << 20}})
	require.NoError(t, err)
	defer rt.Close()
	j := hostabi.NewJournal()
	run := agent.Run{ID: sandboxtest.RunID, AgentID: "agent", Capabilities: []string{agent.CapClock}}
	d := hostabi.NewDispatcher(hostabi.Config{Host: sandboxtest.NewHost(1), Run: run, Node: "clock", Journal: j})
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "clock", ABI: d,
		Script: sandbox.Script{Module: watModule(t, "clock_loop"), Entry: "run"}}, agent.NewBoard())
	sandboxtest.RequireLimit(t, err, sandbox.LimitWallTime, "clock")
	require.Equal(t, 1, j.Len(), "journal entries")
	assert.Equal(t, hostabi.FuncNow, j.Entries()[0].Func)
}
