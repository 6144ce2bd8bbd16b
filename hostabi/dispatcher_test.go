package hostabi_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFunctions(t *testing.T) {
	t.Parallel()
	d := newDispatcher(nil, nil, nil, sandbox.Limits{})
	assert.Equal(t, hostabi.Names(), d.Functions())
	var abi sandbox.ABI = d
	assert.Len(t, abi.Functions(), len(hostabi.Catalog()))

	// The slice is shared and full: an append copies it.
	other := newDispatcher(nil, nil, nil, sandbox.Limits{})
	assert.Same(t, &d.Functions()[0], &other.Functions()[0])
	grown := append(d.Functions(), "extra")
	assert.NotSame(t, &grown[0], &d.Functions()[0])
	assert.Equal(t, hostabi.Names(), d.Functions())
}

func TestUnknownFunction(t *testing.T) {
	t.Parallel()
	d := newDispatcher(newRecorder().fullHost(), allCaps(), nil, sandbox.Limits{})
	for _, name := range []string{"", "Delegate", "fs", "NOW", "now ", strings.Repeat("x", 5000), "\xff"} {
		_, err := call(t, d, name, `[]`)
		requireKind(t, err, fault.NotFound)
		assert.Contains(t, err.Error(), `node "n1"`)
	}
}

// REF 5.4, REF 6.1.3: every catalog function, granted by the
// document or not, provided by the host or not. A refusal is PolicyDenied
// naming the function, the capability and the node, and never reaches the
// host.
func TestPolicy(t *testing.T) {
	t.Parallel()
	var typedNil *agent.HostFuncs
	for _, f := range hostabi.Catalog() {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			args := goodArgs()[f.Name]
			r := newRecorder()

			_, err := call(t, newDispatcher(r.fullHost(), []string{f.Capability}, nil, sandbox.Limits{}), f.Name, args)
			require.NoError(t, err, "granted and provided")

			others := []string{}
			for _, c := range allCaps() {
				if c != f.Capability {
					others = append(others, c)
				}
			}
			type refusal struct {
				host agent.Host
				caps []string
			}
			refusals := map[string]refusal{
				"refused by the document":  {r.fullHost(), others},
				"refused by an empty list": {r.fullHost(), []string{}},
				"refused by a nil host":    {nil, allCaps()},
				"refused by a typed nil":   {typedNil, allCaps()},
			}
			if optional(f.Capability) && f.Name != hostabi.FuncDrainSteer {
				// The Host interface itself publishes, interrupts, asks
				// and takes usage; the optional capabilities can be
				// missing, or hidden by a decorator that stops the search.
				refusals["refused by the host"] = refusal{r.host(), allCaps()}
				refusals["hidden behind a decorator"] = refusal{&opaqueHost{agent.HostFuncs{Inner: r.fullHost()}}, allCaps()}
			}
			before := len(r.envelopes()) + len(r.logLines())
			for name, rf := range refusals {
				_, err := call(t, newDispatcher(rf.host, rf.caps, nil, sandbox.Limits{}), f.Name, args)
				requireKind(t, err, fault.PolicyDenied)
				assert.Contains(t, err.Error(), f.Name, name)
				assert.Contains(t, err.Error(), `"`+f.Capability+`"`, name)
				assert.Contains(t, err.Error(), `"n1"`, name)
			}
			assert.Equal(t, before, len(r.envelopes())+len(r.logLines()), "a refused call never reaches the host")
		})
	}
}

// optional reports whether capability is one a Host may lack.
func optional(capability string) bool {
	switch capability {
	case agent.CapSteer, agent.CapClock, agent.CapRandom, agent.CapLog, agent.CapPublish:
		return true
	}
	return false
}

// REF 6.1.3: host.publish is gated on the host's event bus, not on
// agent.Publisher (which every host is): a host that yields no bus, or a
// provider whose bus is nil, refuses publish with PolicyDenied and nothing
// is published; emit, which streams to the turn's sinks, still works.
func TestPublishNeedsEventBus(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	var nilBus *event.MemoryBus
	for name, h := range map[string]agent.Host{
		"no bus":     r.host(agent.CapClock),
		"nil bus":    &busHost{HostFuncs: agent.HostFuncs{Inner: r.fullHost()}},
		"typed nil":  &busHost{HostFuncs: agent.HostFuncs{Inner: r.fullHost()}, bus: nilBus},
		"noop inner": &agent.HostFuncs{Inner: agent.NoopHost{}},
	} {
		d := newDispatcher(h, []string{agent.CapPublish, agent.CapEmit}, nil, sandbox.Limits{})
		_, err := call(t, d, hostabi.FuncPublish, `["progress", {"n": 1}]`)
		requireKind(t, err, fault.PolicyDenied)
		assert.Contains(t, err.Error(), `does not provide capability "publish"`, name)
		_, err = call(t, d, hostabi.FuncEmit, `["text", "hi"]`)
		require.NoError(t, err, "%s: emit needs no bus", name)
	}
	for _, env := range r.envelopes() {
		assert.False(t, strings.Contains(env.Subject, ".custom."), "a refused publish reached the host: %s", env.Subject)
	}
	_, err := call(t, newDispatcher(r.host(agent.CapPublish), []string{agent.CapPublish}, nil, sandbox.Limits{}),
		hostabi.FuncPublish, `["progress"]`)
	require.NoError(t, err, "a host with a bus publishes")
}

// REF 5.4: drainSteer gives an empty array when the host has no
// steer source (a delegated sub-run has its steer source withheld).
func TestDrainSteerWithoutSteerSource(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	for name, h := range map[string]agent.Host{
		"no steer source": r.host(agent.CapClock),
		"hidden":          &opaqueHost{agent.HostFuncs{Inner: r.fullHost()}},
		"noop":            agent.NoopHost{},
	} {
		out, err := call(t, newDispatcher(h, []string{agent.CapSteer}, nil, sandbox.Limits{}), hostabi.FuncDrainSteer, `[]`)
		require.NoError(t, err, name)
		assert.JSONEq(t, `[]`, string(out), name)
	}
	_, err := call(t, newDispatcher(r.host(), nil, nil, sandbox.Limits{}), hostabi.FuncDrainSteer, `[]`)
	requireKind(t, err, fault.PolicyDenied)
}

func TestArguments(t *testing.T) {
	t.Parallel()
	for _, f := range hostabi.Catalog() {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			d := newDispatcher(newRecorder().fullHost(), allCaps(), nil, sandbox.Limits{})
			lo, hi := f.Arity()
			bad := []string{`null`, `{}`, `"x"`, `1`, `[`, `[] []`, `[]x`, `nope`}
			bad = append(bad, `[`+strings.Repeat(`1,`, hi)+`1]`) // one too many
			if lo > 0 {
				bad = append(bad, `[]`)
			}
			for _, args := range bad {
				_, err := call(t, d, f.Name, args)
				requireKind(t, err, fault.Validation)
				assert.Contains(t, err.Error(), "host "+f.Name, args)
				assert.Contains(t, err.Error(), `node "n1"`, args)
			}
			if lo == 0 {
				for _, args := range []string{``, ` `, `[]`, " [ ] \n"} {
					_, err := call(t, d, f.Name, args)
					assert.NoError(t, err, "%q", args)
				}
			}
		})
	}
}

func TestArgumentIndexInErrors(t *testing.T) {
	t.Parallel()
	d := newDispatcher(newRecorder().fullHost(), allCaps(), nil, sandbox.Limits{})
	tests := []struct{ name, args, want string }{
		{hostabi.FuncPublish, `[1]`, "argument 0: subject suffix: want a string"},
		{hostabi.FuncEmit, `[null,"x"]`, "argument 0: type: want a string, got null"},
		{hostabi.FuncEmit, `["","x"]`, "argument 0: type: must not be empty"},
		{hostabi.FuncLog, `["info",2]`, "argument 1: message: want a string"},
		{hostabi.FuncLog, `["loud","x"]`, `argument 0: level "loud" is not one of`},
		{hostabi.FuncLog, `["info","x",[1]]`, "argument 2: attrs: want an object"},
		{hostabi.FuncAskUser, `[{"parts":[{"type":"text","text":"q"}],"color":1}]`, `argument 0: prompt: want an object: json: unknown field "color"`},
		{hostabi.FuncReportUsage, `[{"input":-1}]`, "argument 0: usage: counts must be >= 0"},
		{hostabi.FuncReportUsage, `[{"input":1.5}]`, "argument 0: usage: want an object"},
		{hostabi.FuncReportUsage, `[{"inputs":1}]`, `unknown field "inputs"`},
	}
	for _, tt := range tests {
		_, err := call(t, d, tt.name, tt.args)
		requireKind(t, err, fault.Validation)
		assert.Contains(t, err.Error(), tt.want, tt.args)
		assert.Contains(t, err.Error(), "host "+tt.name+`: node "n1"`, tt.args)
	}
}

func TestContext(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.askErr = context.Canceled
	d := newDispatcher(r.fullHost(), allCaps(), nil, sandbox.Limits{})
	_, err := d.Call(context.Background(), hostabi.FuncAskUser, json.RawMessage(goodArgs()[hostabi.FuncAskUser]))
	requireKind(t, err, fault.Aborted)
	assert.ErrorIs(t, err, context.Canceled)

	r.askErr = context.DeadlineExceeded
	_, err = d.Call(context.Background(), hostabi.FuncAskUser, json.RawMessage(goodArgs()[hostabi.FuncAskUser]))
	requireKind(t, err, fault.Timeout)

	// A context that already ended stops the call before the host.
	j := hostabi.NewJournal()
	d2 := newDispatcher(r.fullHost(), allCaps(), j, sandbox.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{hostabi.FuncPublish, hostabi.FuncNow} {
		_, err = d2.Call(ctx, name, json.RawMessage(goodArgs()[name]))
		requireKind(t, err, fault.Aborted)
	}
	assert.Empty(t, r.envelopes())
	assert.Zero(t, j.Len())

	//nolint:staticcheck // a nil context must be an error, not a panic
	_, err = d.Call(nil, hostabi.FuncNow, nil)
	requireKind(t, err, fault.Validation)
}

// REF 5.4: the size of any value crossing the ABI is capped; a
// limit hit is a *sandbox.LimitError naming the limit and the node.
func TestValueBytesLimit(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	d := newDispatcher(r.fullHost(), allCaps(), nil, sandbox.Limits{MaxValueBytes: 64})
	_, err := call(t, d, hostabi.FuncPublish, `["x","`+strings.Repeat("a", 64)+`"]`)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitError{Limit: sandbox.LimitValueBytes, Node: "n1", Max: 64}, *le)
	assert.ErrorIs(t, err, fault.BudgetExceeded)
	assert.Empty(t, r.envelopes())

	// A result over the cap: drainSteer's messages.
	r.steer = []message.Message{message.NewTextMessage(message.RoleUser, strings.Repeat("b", 100))}
	_, err = call(t, d, hostabi.FuncDrainSteer, `[]`)
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitValueBytes, le.Limit)

	// Exactly at the cap is accepted.
	args := `["x","` + strings.Repeat("a", 64-len(`["x",""]`)) + `"]`
	require.Len(t, args, 64)
	_, err = call(t, d, hostabi.FuncPublish, args)
	require.NoError(t, err)
}

// REF 5.4: publish and emit share the per-call event count and byte
// caps (MaxEvents, MaxEventBytes).
func TestEventLimits(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	d := newDispatcher(r.fullHost(), allCaps(), nil, sandbox.Limits{MaxEvents: 3})
	for _, c := range []struct{ name, args string }{
		{hostabi.FuncPublish, `["a",1]`}, {hostabi.FuncEmit, `["token","x"]`}, {hostabi.FuncPublish, `["b"]`},
	} {
		_, err := call(t, d, c.name, c.args)
		require.NoError(t, err)
	}
	n, _ := d.Events()
	assert.Equal(t, 3, n)
	for _, name := range []string{hostabi.FuncPublish, hostabi.FuncEmit} {
		_, err := call(t, d, name, goodArgs()[name])
		var le *sandbox.LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, sandbox.LimitError{Limit: sandbox.LimitEvents, Node: "n1", Max: 3}, *le)
	}
	assert.Len(t, r.envelopes(), 3)

	r2 := newRecorder()
	d2 := newDispatcher(r2.fullHost(), allCaps(), nil, sandbox.Limits{MaxEventBytes: 100})
	_, err := call(t, d2, hostabi.FuncPublish, `["a","`+strings.Repeat("x", 60)+`"]`)
	require.NoError(t, err)
	_, bytes := d2.Events()
	assert.Equal(t, int64(62), bytes)
	_, err = call(t, d2, hostabi.FuncEmit, `["token","`+strings.Repeat("y", 40)+`"]`)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitEventBytes, le.Limit)
	assert.ErrorIs(t, err, fault.BudgetExceeded)
	assert.Len(t, r2.envelopes(), 1)

	// The counters are per dispatcher: a new node call starts afresh.
	d3 := newDispatcher(r.fullHost(), allCaps(), nil, sandbox.Limits{MaxEvents: 3})
	_, err = call(t, d3, hostabi.FuncEmit, `["token","x"]`)
	require.NoError(t, err)
}

func TestLogLimit(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	d := newDispatcher(r.fullHost(), allCaps(), nil, sandbox.Limits{MaxLogBytes: 20})
	_, err := call(t, d, hostabi.FuncLog, `["info","0123456789"]`)
	require.NoError(t, err)
	_, err = call(t, d, hostabi.FuncLog, `["info","0123456789"]`)
	require.NoError(t, err, "exactly at the cap")
	_, err = call(t, d, hostabi.FuncLog, `["debug","x"]`)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitError{Limit: sandbox.LimitLogBytes, Node: "n1", Max: 20}, *le)
	assert.Len(t, r.logLines(), 2)
}

// The dispatcher is safe for concurrent use; the hammer runs under -race.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	j := hostabi.NewJournal()
	d := newDispatcher(r.fullHost(), allCaps(), j, sandbox.Limits{MaxEvents: 50})
	var wg sync.WaitGroup
	var mu sync.Mutex
	limitHits := 0
	for i := range 8 {
		wg.Go(func() {
			for k := range 20 {
				for _, f := range hostabi.Catalog() {
					if f.Name == hostabi.FuncAskUser && (i+k)%2 == 1 {
						continue
					}
					_, err := call(t, d, f.Name, goodArgs()[f.Name])
					var le *sandbox.LimitError
					if errors.As(err, &le) {
						mu.Lock()
						limitHits++
						mu.Unlock()
						continue
					}
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()
	n, _ := d.Events()
	assert.Equal(t, 50, n)
	assert.Equal(t, 2*8*20-50, limitHits)
	entries := j.Entries()
	for i, e := range entries {
		assert.Equal(t, i+1, e.Seq)
	}
}
