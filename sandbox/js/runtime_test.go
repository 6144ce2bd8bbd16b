package js_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

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

func invoke(t *testing.T, rt *js.Runtime, src string) (*agent.Board, error) {
	t.Helper()
	b := agent.NewBoard()
	err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: src}}, b)
	return b, err
}

func mustNew(t *testing.T, o js.Options) *js.Runtime {
	t.Helper()
	rt, err := js.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

func TestFactory(t *testing.T) {
	t.Parallel()
	f := js.Factory()
	assert.Equal(t, resource.Spec{Kind: sandbox.Kind, Impl: "js"}, f.Spec())
	for _, tc := range []struct {
		name     string
		settings string
		wantErr  bool
		check    func(t *testing.T, rt *js.Runtime)
	}{
		{"empty takes defaults", ``, false, func(t *testing.T, rt *js.Runtime) {
			assert.Equal(t, sandbox.DefaultLimits(), rt.Limits())
			assert.Positive(t, rt.PoolSize())
		}},
		{"limits and sizes", `{"limits": {"wall_time": "250ms", "run_time": "1m", "memory_bytes": 1048576, "stack_depth": 64,
			"max_value_bytes": 100, "max_events": 3, "max_event_bytes": 1000, "max_log_bytes": 10, "max_board_bytes": 4096},
			"pool_size": 3, "program_cache_size": 5}`, false, func(t *testing.T, rt *js.Runtime) {
			assert.Equal(t, sandbox.Limits{WallTime: 250 * time.Millisecond, RunTime: time.Minute, MemoryBytes: 1 << 20,
				StackDepth: 64, MaxValueBytes: 100, MaxEvents: 3, MaxEventBytes: 1000, MaxLogBytes: 10, MaxBoardBytes: 4096},
				rt.Limits())
			assert.Equal(t, 3, rt.PoolSize())
		}},
		{"limits above the defaults", `{"limits": {"wall_time": "1m", "max_events": 5000}}`, false, func(t *testing.T, rt *js.Runtime) {
			assert.Equal(t, time.Minute, rt.Limits().WallTime)
			assert.Equal(t, 5000, rt.Limits().MaxEvents)
			assert.Equal(t, int64(sandbox.DefaultMemoryBytes), rt.Limits().MemoryBytes)
		}},
		{"host memory ceiling", `{"host_memory_bytes": 1073741824}`, false, func(t *testing.T, rt *js.Runtime) {
			assert.Equal(t, int64(1<<30), rt.HostMemoryBytes())
		}},
		{"no host memory ceiling", `{"host_memory_bytes": -1}`, false, func(t *testing.T, rt *js.Runtime) {
			assert.Zero(t, rt.HostMemoryBytes())
		}},
		{"host memory ceiling from the host", ``, false, func(t *testing.T, rt *js.Runtime) {
			assert.Equal(t, sandbox.HostMemoryCeiling(), rt.HostMemoryBytes())
		}},
		{"unknown key", `{"pool": 3}`, true, nil},
		{"unknown limit", `{"limits": {"cpu": 1}}`, true, nil},
		{"duration as a number", `{"limits": {"wall_time": 5}}`, true, nil},
		{"bad duration", `{"limits": {"wall_time": "soon"}}`, true, nil},
		{"negative duration", `{"limits": {"wall_time": "-1s"}}`, true, nil},
		{"negative memory", `{"limits": {"memory_bytes": -1}}`, true, nil},
		{"negative pool", `{"pool_size": -1}`, true, nil},
		{"trailing data", `{} {}`, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := f.New(context.Background(), resource.Input{Name: "scripts", Settings: json.RawMessage(tc.settings)})
			if tc.wantErr {
				sandboxtest.RequireKind(t, err, fault.Validation)
				assert.Contains(t, err.Error(), `"scripts"`)
				return
			}
			require.NoError(t, err)
			rt, ok := v.(*js.Runtime)
			require.True(t, ok)
			defer rt.Close()
			tc.check(t, rt)
		})
	}
}

// Close stops running calls (Aborted), waits for them, refuses new calls
// and is idempotent.
// REF 9.10
func TestClose(t *testing.T) {
	t.Parallel()
	rt, err := js.New(js.Options{})
	require.NoError(t, err)
	done := make(chan error, 1)
	running := &signalABI{called: make(chan struct{})}
	go func() {
		done <- sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", ABI: running,
			Script: sandbox.Script{Source: `host.log("info", "running"); for (;;) {}`}}, agent.NewBoard())
	}()
	select {
	case <-running.called: // the call runs its loop
	case err := <-done:
		t.Fatalf("the call ended before it ran: %v", err)
	}
	require.NoError(t, rt.Close())
	select {
	case err := <-done:
		sandboxtest.RequireKind(t, err, fault.Aborted)
	case <-time.After(time.Minute):
		t.Fatal("Close did not stop the running call")
	}
	require.NoError(t, rt.Close(), "a second Close")
	_, err = invoke(t, rt, `1`)
	sandboxtest.RequireKind(t, err, fault.NotAvailable)
	_, err = rt.Eval(context.Background(), sandbox.Evaluation{Node: "c", Expr: "1"})
	sandboxtest.RequireKind(t, err, fault.NotAvailable)
}

// The pool bounds concurrent calls; a call that cannot get a slot before
// its context ends fails with NotAvailable.
// REF 9.1
func TestPoolLimitsConcurrency(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{PoolSize: 1, Limits: sandbox.Limits{WallTime: time.Minute}})
	ctx, cancel := context.WithCancel(context.Background())
	busy := make(chan error, 1)
	go func() {
		busy <- sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "busy", Script: sandbox.Script{Source: `for (;;) {}`}}, nil)
	}()
	require.Eventually(t, func() bool {
		wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer wcancel()
		err := sandbox.InvokeOn(wctx, rt, sandbox.Invocation{Node: "waiter", Script: sandbox.Script{Source: `1`}}, nil)
		return fault.Is(err, fault.NotAvailable)
	}, time.Minute, 10*time.Millisecond, "a second call must wait for the only slot")
	cancel()
	sandboxtest.RequireKind(t, <-busy, fault.Aborted)
	_, err := invoke(t, rt, `board.setVar("ok", true)`)
	require.NoError(t, err, "the slot is free again")
}

// An invocation's limits tighten the runtime's and never loosen them.
func TestLimitsNeverLoosened(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{Limits: sandbox.Limits{WallTime: 200 * time.Millisecond, StackDepth: 50}})
	err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `for (;;) {}`},
		Limits: sandbox.Limits{WallTime: time.Hour}}, nil)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitWallTime, le.Limit)
	assert.Equal(t, int64(200*time.Millisecond), le.Max, "the runtime's wall time wins")
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `function f() { f() } f()`},
		Limits: sandbox.Limits{StackDepth: 10000}}, nil)
	require.ErrorAs(t, err, &le)
	assert.Equal(t, int64(50), le.Max)
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `1`},
		Limits: sandbox.Limits{MemoryBytes: -1}}, nil)
	sandboxtest.RequireKind(t, err, fault.Validation)
}

// The script is a function body: return ends it, and its declarations are
// its own.
func TestScriptShape(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	b, err := invoke(t, rt, "board.setVar(\"a\", 1)\nif (true) return\nboard.setVar(\"b\", 2)")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": float64(1)}, b.Vars)
	b, err = invoke(t, rt, `var x = 1; board.setVar("global", typeof globalThis.x)`)
	require.NoError(t, err)
	assert.Equal(t, "undefined", b.Vars["global"])
	b, err = invoke(t, rt, `Promise.resolve(1).then(v => board.setVar("then", v)); (async () => board.setVar("async", await 2))()`)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"then": 1.0, "async": 2.0}, b.Vars, "promise jobs run before the call returns")
	_, err = invoke(t, rt, `}); (function() {`)
	sandboxtest.RequireKind(t, err, fault.Validation)
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Module: []byte{0, 'a', 's', 'm'}}}, nil)
	sandboxtest.RequireKind(t, err, fault.Validation)
}

// An uncaught error thrown by a host call ends the call with the host's
// error itself; the script sees code and message.
func TestHostErrorKeepsItsChain(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	sentinel := fault.New(fault.NotFound, "lookup", "no such thing")
	abi := &funcABI{call: func(string, json.RawMessage) (json.RawMessage, error) { return nil, sentinel }}
	b := agent.NewBoard()
	err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", ABI: abi,
		Script: sandbox.Script{Source: `try { host.thing() } catch (e) { board.setVar("seen", [e.code, e.message]) } host.thing()`}}, b)
	require.ErrorIs(t, err, sentinel)
	assert.True(t, errors.Is(err, fault.NotFound))
	assert.Equal(t, []any{"not_found", "lookup: no such thing"}, b.Vars["seen"])
}

// funcABI is an ABI of one function, "thing", plus log.
type funcABI struct {
	mu    sync.Mutex
	calls []string
	call  func(name string, args json.RawMessage) (json.RawMessage, error)
}

func (a *funcABI) Functions() []string { return []string{"log", "thing"} }

func (a *funcABI) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	a.mu.Lock()
	a.calls = append(a.calls, name+" "+string(args))
	a.mu.Unlock()
	return a.call(name, args)
}

// console.* goes to host.log; a refused log is dropped.
func TestConsoleRoutesToLog(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	h := sandboxtest.NewHost(1)
	run := agent.Run{ID: "r", Capabilities: []string{agent.CapLog}}
	d := hostabi.NewDispatcher(hostabi.Config{Host: h, Run: run, Node: "n"})
	err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", ABI: d,
		Script: sandbox.Script{Source: `console.log("hello", {a: 1}, 2); console.warn("careful")`}}, nil)
	require.NoError(t, err)
	assert.Equal(t, []sandboxtest.LogLine{{Level: "info", Message: `hello {"a":1} 2`}, {Level: "warn", Message: "careful"}}, h.Logs())
	refused := hostabi.NewDispatcher(hostabi.Config{Host: h, Run: agent.Run{ID: "r", Capabilities: []string{}}, Node: "n"})
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", ABI: refused,
		Script: sandbox.Script{Source: `console.log("dropped")`}}, nil)
	require.NoError(t, err)
	assert.Len(t, h.Logs(), 2)
}

const tzEnv = "JS_TEST_DATES_CHILD"

// TestDatesChild runs the dates program in a child process whose local
// zone is not UTC (TestDatesUTCWhateverTheZone starts it).
func TestDatesChild(t *testing.T) {
	if os.Getenv(tzEnv) == "" {
		t.Skip("runs only as the child process of TestDatesUTCWhateverTheZone")
	}
	rt := mustNew(t, js.Options{})
	b, err := invoke(t, rt, sandboxtest.JSPrograms()["utc_dates"].Source)
	require.NoError(t, err)
	d := b.Vars["dates"].(map[string]any)
	assert.Equal(t, "Tue Jan 02 2024 03:04:05 GMT+0000 (UTC)", d["string"])
	assert.Equal(t, float64(3), d["hours"])
	assert.Equal(t, float64(0), d["offset"])
	assert.Equal(t, "2024-01-02T03:04:05.000Z", d["parsed"])
	assert.Equal(t, true, d["same"])
}

// Dates are UTC even when the host's zone is not.
func TestDatesUTCWhateverTheZone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a child process")
	}
	for _, tz := range []string{"Asia/Kolkata", "America/New_York"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDatesChild$", "-test.v")
		cmd.Env = append(os.Environ(), tzEnv+"=1", "TZ="+tz)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s:\n%s", tz, out)
		assert.Contains(t, string(out), "--- PASS: TestDatesChild")
	}
}

// Eval returns JSON values, isolated from node scripts and from each
// other; vars are copies.
func TestEvalValues(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	vars := map[string]any{"list": []any{1.0, 2.0}, "__iterations": 3.0}
	for _, tc := range []struct {
		expr string
		want any
	}{
		{`list.length + __iterations`, 5.0},
		{`undefined`, nil},
		{`"a" + 1`, "a1"},
		{`list.map(x => x * 2)`, []any{2.0, 4.0}},
		{`(list.push(9), list.length)`, 3.0},
		{`list.length`, 2.0},
		{`typeof board === "undefined" && typeof host === "undefined"`, true},
		{`new Date(0).toISOString()`, "1970-01-01T00:00:00.000Z"},
	} {
		got, err := rt.Eval(context.Background(), sandbox.Evaluation{Node: "e", Expr: tc.expr, Vars: vars})
		require.NoError(t, err, tc.expr)
		assert.Equal(t, tc.want, got, tc.expr)
	}
	assert.Equal(t, []any{1.0, 2.0}, vars["list"], "the caller's vars are not changed")
	_, err := rt.Eval(context.Background(), sandbox.Evaluation{Node: "e", Expr: `null.x`})
	var se *sandbox.ScriptError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "e", se.Node)
	_, err = rt.Eval(context.Background(), sandbox.Evaluation{Node: "e", Expr: `"x".repeat(2 ** 30)`})
	sandboxtest.RequireLimit(t, err, sandbox.LimitMemory, "e")
}

// Code made by eval and the Function constructor is cached apart from
// node scripts: a script named "eval" or "anonymous" with the same source
// as such code gets its own program, whichever runs first.
func TestDynamicCodeCachedApartFromScripts(t *testing.T) {
	t.Parallel()
	const body = `board.setVar("x", 1)`
	fnSrc := "(function anonymous(\n) {\n" + body + "\n})"
	type step struct{ name, src string }
	evalCode := step{"n", `eval(` + jsString(body) + `)`}
	evalScript := step{"eval", body}
	fnCode := step{"n", `Function(` + jsString(body) + `)()`}
	fnScript := step{"anonymous", fnSrc + "()"}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"eval then a script named eval", []step{evalCode, evalScript}},
		{"a script named eval then eval", []step{evalScript, evalCode}},
		{"Function then a script named anonymous", []step{fnCode, fnScript}},
		{"a script named anonymous then Function", []step{{"anonymous", fnSrc}, fnCode}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt := mustNew(t, js.Options{})
			for _, s := range tc.steps {
				b := agent.NewBoard()
				err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n",
					Script: sandbox.Script{Name: s.name, Source: s.src}}, b)
				require.NoError(t, err, "%s: %s", s.name, s.src)
				if s.src != fnSrc {
					assert.Equal(t, 1.0, b.Vars["x"], "%s: %s", s.name, s.src)
				}
			}
		})
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The script engine fails at run time on an arrow function that reads the
// arguments of the function around it, so such a script is refused when
// it compiles, with a Validation error naming the node and saying what to
// write instead; arguments elsewhere (a function's own, one nested in an
// arrow, a property named arguments) works.
func TestArgumentsInArrowFunctions(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	for _, tc := range []struct {
		src  string
		want any // nil: refused
	}{
		{`const f = () => arguments.length; board.setVar("n", f())`, nil},
		{`function g() { return (() => arguments.length)() } board.setVar("n", g(1, 2))`, nil},
		{`const f = () => () => arguments[0]; board.setVar("n", f()())`, nil},
		{`board.setVar("n", arguments.length)`, 0.0},
		{`function g() { return arguments.length } board.setVar("n", g(1, 2))`, 2.0},
		{`const f = () => { function h() { return arguments.length } return h(1, 2, 3) }; board.setVar("n", f())`, 3.0},
		{`const o = {arguments: 4}; const f = () => o.arguments; board.setVar("n", f())`, 4.0},
		{`const f = (...args) => args.length; board.setVar("n", f(1, 2, 3, 4, 5))`, 5.0},
	} {
		b := agent.NewBoard()
		err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "args", Script: sandbox.Script{Source: tc.src}}, b)
		if tc.want == nil {
			require.Error(t, err, tc.src)
			assert.ErrorIs(t, err, fault.Validation, tc.src)
			assert.ErrorContains(t, err, "rest parameter", tc.src)
			assert.ErrorContains(t, err, `"args"`, tc.src)
			continue
		}
		require.NoError(t, err, tc.src)
		assert.Equal(t, tc.want, b.Vars["n"], tc.src)
	}
}

// signalABI offers log alone and closes called at its first call.
type signalABI struct {
	once   sync.Once
	called chan struct{}
}

func (a *signalABI) Functions() []string { return []string{"log"} }

func (a *signalABI) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	a.once.Do(func() { close(a.called) })
	return json.RawMessage(`null`), nil
}

// A script that does not compile fails with a Validation error at once,
// also while every slot is busy and after Close: it does not wait for a
// slot (nor time out waiting for one).
func TestCompileErrorWithoutSlot(t *testing.T) {
	t.Parallel()
	rt, err := js.New(js.Options{PoolSize: 1})
	require.NoError(t, err)
	running := &signalABI{called: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "busy", ABI: running,
			Script: sandbox.Script{Source: `host.log("info", "running"); for (;;) {}`}}, agent.NewBoard())
	}()
	<-running.called
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "bad", Script: sandbox.Script{Source: `)(`}}, agent.NewBoard())
	sandboxtest.RequireKind(t, err, fault.Validation)
	require.NoError(t, rt.Close())
	sandboxtest.RequireKind(t, <-done, fault.Aborted)
	_, err = invoke(t, rt, `}{`)
	sandboxtest.RequireKind(t, err, fault.Validation)
}

// The longest wall time there is still lets a call run: its deadline
// saturates rather than overflows into the past.
func TestHugeWallTime(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{Limits: sandbox.Limits{WallTime: math.MaxInt64}})
	// Long enough for the watchdog to look at the call a few times.
	b, err := invoke(t, rt, `let n = 0; for (let i = 0; i < 2e6; i++) { n += i } board.setVar("ok", n > 0)`)
	require.NoError(t, err)
	assert.Equal(t, true, b.Vars["ok"])
}

// A VM's wall-time timer outlives its calls (armed for an earlier call's
// deadline, or fired between calls) and still stops each call at its own
// wall time: a call with a shorter wall time than the one before it, and
// a call after the timer fired while the VM was idle.
// REF 9.3
func TestWallTimeOnAReusedVM(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{PoolSize: 1, Limits: sandbox.Limits{WallTime: time.Hour}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a stop that never comes fails, not hangs
	defer cancel()
	call := func(src string, wall time.Duration) error {
		return sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: src},
			Limits: sandbox.Limits{WallTime: wall}}, nil)
	}
	requireWallTime := func(err error) {
		t.Helper()
		var le *sandbox.LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, sandbox.LimitWallTime, le.Limit)
		require.NoError(t, ctx.Err(), "the call's own wall time stops it, not the test's bound")
	}
	require.NoError(t, call(`1`, time.Hour)) // the timer is armed an hour ahead
	requireWallTime(call(`for (;;) {}`, 50*time.Millisecond))
	_ = call(`1`, 10*time.Millisecond) // arms the timer 10 ms ahead (on a starved machine the call may overrun it: no matter)
	time.Sleep(100 * time.Millisecond) // the timer fires with no call running
	requireWallTime(call(`for (;;) {}`, 50*time.Millisecond))
}
