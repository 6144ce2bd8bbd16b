package sandboxtest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eventRecord is what determinism compares of an event: not its id or
// time, which the event layer mints.
type eventRecord struct {
	Subject string
	Headers map[string]string
	Payload string
}

func records(res Result) []eventRecord {
	var out []eventRecord
	for _, e := range events(res) {
		out = append(out, eventRecord{e.Subject, e.Headers, string(e.Payload)})
	}
	return out
}

func determinism(t *testing.T, env *Env) {
	grants := append(hostabi.DefaultGrants(), agent.CapPublish)
	run := func() Result {
		res := env.Invoke(t, Call{Program: "deterministic", Host: NewHost(7), Grants: grants})
		require.NoError(t, res.Err)
		return res
	}
	first, second := run(), run()
	assert.Equal(t, first.Board, second.Board)
	assert.Equal(t, records(first), records(second))
	assert.Equal(t, first.Journal.Entries(), second.Journal.Entries())
	assert.NotEmpty(t, first.Journal.Entries(), "time and randomness are journaled")
	assert.Equal(t, float64(Epoch().UnixMilli()), Var(t, first, "now"), "Date.now reads the host clock")
	other := env.Invoke(t, Call{Program: "deterministic", Host: NewHost(8), Grants: grants})
	require.NoError(t, other.Err)
	assert.NotEqual(t, Var(t, first, "random"), Var(t, other, "random"), "another seed gives other numbers")
}

func datesUTC(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "utc_dates"})
	require.NoError(t, res.Err)
	d, ok := Var(t, res, "dates").(map[string]any)
	require.True(t, ok)
	assert.Equal(t, float64(3), d["hours"])
	assert.Equal(t, float64(0), d["offset"])
	assert.Equal(t, "2024-01-02T03:04:05.000Z", d["parsed"])
	assert.Equal(t, true, d["same"])
	assert.Contains(t, d["string"], "03:04:05")
}

func isolation(t *testing.T, env *Env) {
	shared := agent.NewBoard()
	res := env.Invoke(t, Call{Program: "pollute", Board: shared})
	require.NoError(t, res.Err)
	want := map[string]any{"leaked": "undefined", "leakedVar": "undefined", "polluted": "no",
		"push": float64(2), "stringify": `{"a":1}`, "floor": float64(1)}
	same := env.Invoke(t, Call{Program: "inspect", Board: shared})
	require.NoError(t, same.Err)
	assert.Equal(t, want, Var(t, same, "seen"), "the next run of the same session")
	other := env.Invoke(t, Call{Program: "inspect", Host: NewHost(99), Node: "other"})
	require.NoError(t, other.Err)
	assert.Equal(t, want, Var(t, other, "seen"), "a run of another session")
}

func concurrentIsolation(t *testing.T, env *Env) {
	const n = 8
	script := env.Script(t, "concurrent")
	results := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := Call{Program: "concurrent", Config: map[string]any{"id": fmt.Sprint("run-", i)}}
			ctx, inv, res := env.invocation(c, script)
			before := res.Board.Clone()
			out, err := env.Runtime.Invoke(ctx, inv)
			results[i] = env.complete(t, before, res, out, err)
		}()
	}
	wg.Wait()
	for i, res := range results {
		require.NoError(t, res.Err, "run %d", i)
		assert.Equal(t, fmt.Sprint("run-", i), Var(t, res, "who"), "run %d saw another run's global", i)
		assert.Equal(t, fmt.Sprint("run-", i), Var(t, res, "id"))
	}
}
