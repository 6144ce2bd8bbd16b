package proc_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call in a worker and the same call in process leave the same board,
// events and journal: host calls run on the parent's dispatcher either
// way, so a run recorded in one isolation replays in the other.
func TestSameJournalInBothModes(t *testing.T) {
	inproc, err := js.New(js.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inproc.Close() })
	process := newProcessJS(t, "")
	grants := append(hostabi.DefaultGrants(), agent.CapPublish)
	results := make([]sandboxtest.Result, 2)
	for i, rt := range []sandbox.Runtime{inproc, process} {
		env := &sandboxtest.Env{Runtime: rt, Programs: sandboxtest.JSPrograms()}
		results[i] = env.Invoke(t, sandboxtest.Call{Program: "deterministic", Host: sandboxtest.NewHost(7), Grants: grants})
		require.NoError(t, results[i].Err)
	}
	assert.Equal(t, results[0].Board, results[1].Board)
	assert.Equal(t, results[0].Journal.Entries(), results[1].Journal.Entries())
	assert.NotEmpty(t, results[1].Journal.Entries())
	assert.Equal(t, published(results[0]), published(results[1]))
}

// published is what a call published: subjects and payloads (envelope
// ids and times are the bus's own).
func published(r sandboxtest.Result) []string {
	var out []string
	for _, e := range r.Host.(*sandboxtest.Host).Events() {
		out = append(out, e.Subject+" "+string(e.Payload))
	}
	return out
}

// The isolation setting is checked: an unknown isolation, a malformed
// idle_timeout, a negative cap and an unknown process key are Validation
// errors; in_process builds the in-process runtime.
func TestIsolationSettings(t *testing.T) {
	build := func(settings string) (any, error) {
		return js.Factory().New(context.Background(), resource.Input{Name: "js", Settings: []byte(settings)})
	}
	for _, bad := range []string{
		`{"isolation": "vm"}`,
		`{"isolation": "process", "process": {"idle_timeout": "soon"}}`,
		`{"isolation": "process", "process": {"memory_per_worker": -1}}`,
		`{"isolation": "process", "process": {"memory": 1}}`,
	} {
		_, err := build(bad)
		assert.True(t, fault.Is(err, fault.Validation), "%s: %v", bad, err)
	}
	v, err := build(`{"isolation": "in_process"}`)
	require.NoError(t, err)
	rt, ok := v.(*js.Runtime)
	require.True(t, ok)
	require.NoError(t, rt.Close())
}

// A tenant's memory_per_worker quota, bound by the runtime that builds
// the resource, caps that tenant's workers; a tenant without one gets the
// runtime's own setting.
func TestBoundWorkerMemory(t *testing.T) {
	rt := newProcessJS(t, "")
	quota := workerMemory() + 64<<20
	rt.BindWorkerMemory(func(tenant string) int64 {
		if tenant == "acme" {
			return quota
		}
		return 0
	})
	for _, tenant := range []string{"acme", "beta"} {
		_, _, err := invoke(context.Background(), rt, tenant, "n", `board.setVar("ok", 1)`)
		require.NoError(t, err)
	}
	caps := map[string]int64{}
	for _, w := range rt.Workers() {
		caps[w.Tenant] = w.MemoryBytes
	}
	assert.Equal(t, quota, caps["acme"])
	assert.Equal(t, workerMemory(), caps["beta"])
}

// In isolation: process a script is checked in the parent, with the js
// runtime's own compile check, and nothing of it runs.
func TestProcessCheck(t *testing.T) {
	rt := newProcessJS(t, "")
	require.NoError(t, sandbox.CheckScript(context.Background(), rt, sandbox.Script{Name: "ok", Source: `board.setVar("a", 1)`}, sandbox.Limits{}))
	err := sandbox.CheckScript(context.Background(), rt, sandbox.Script{Name: "bad", Source: "const a = 1;\nconst b = ;"}, sandbox.Limits{})
	var ce *sandbox.CompileError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 2, ce.Line)
	assert.True(t, fault.Is(err, fault.Validation))
	assert.Empty(t, rt.Workers(), "a check starts no worker")
}

// A call that sets one var many times writes more than a worker's answer
// may carry (80 values of a mebibyte, past the 64 MiB frame bound) ends
// as it does in process: the board holds the last value. The worker
// leaves out the writes a later one undoes; before, the call failed with
// an Internal error ("send result: message too large").
func TestOverwritesPastTheFrameBound(t *testing.T) {
	t.Parallel()
	// One string set 80 times (the worker holds it once, and its answer
	// writes it 80 times), then another.
	src := `const s = "x".repeat((1 << 20) - 64); for (let i = 0; i < 80; i++) board.setVar("v", s); board.setVar("v", s + "79"); board.setVar("n", 80)`
	// The worker encodes an answer of 80 MiB before it finds it too large:
	// under the race detector, whose shadow memory counts against the cap,
	// that takes more than the tests' usual cap.
	for name, rt := range map[string]sandbox.Runtime{"process": newProcessJSWith(t, 4*workerMemory(), ""), "in process": mustInProcess(t)} {
		b := agent.NewBoard()
		require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n",
			Script: sandbox.Script{Source: src}}, b), name)
		v, _ := b.Vars["v"].(string)
		assert.Equal(t, (1<<20)-64+2, len(v), name)
		assert.Equal(t, "79", v[len(v)-2:], name)
		assert.EqualValues(t, 80, b.Vars["n"], name)
	}
}

// mustInProcess is the in-process js runtime, closed when the test ends.
func mustInProcess(t *testing.T) sandbox.Runtime {
	rt, err := js.New(js.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}
