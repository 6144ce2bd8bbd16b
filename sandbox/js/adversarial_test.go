package js_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attack is a hostile script and how it must end: with a limit (a
// *sandbox.LimitError), with an error of a kind, or without an error.
type attack struct {
	name   string
	src    string
	limit  string      // the LimitError it must end with, or ""
	kind   *fault.Kind // else the kind it must end with; nil: no error
	grants []string    // nil: the default grants
	wall   time.Duration
	check  func(t *testing.T, res *attackResult)
}

type attackResult struct {
	board *agent.Board
	host  *sandboxtest.Host
}

// escapeProbe looks for ways out of the sandbox and records what it finds.
const escapeProbe = `
	const found = [];
	const roots = [globalThis, Function("return this")(), (function(){}).constructor.constructor("return this")()];
	for (const r of roots) {
		for (const name of ["require", "process", "module", "exports", "Go", "fs", "os", "exec", "setTimeout", "fetch"]) {
			if (typeof r[name] !== "undefined") found.push(name);
		}
	}
	if (roots[1] !== globalThis || roots[2] !== globalThis) found.push("another global");
	board.setVar("found", found);`

// globalWalk reaches every property of every object reachable from
// globalThis and calls every function it finds with no arguments, except
// the ones that end the script.
const globalWalk = `
	const seen = new Set(); const queue = [globalThis]; let calls = 0;
	const skip = new Set([signal.done, signal.error, signal.interrupt, eval, Function]);
	while (queue.length && seen.size < 5000) {
		const o = queue.shift();
		if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) continue;
		seen.add(o);
		for (const k of Reflect.ownKeys(o)) {
			let v; try { v = o[k] } catch (e) { continue }
			queue.push(v);
			if (typeof v === "function" && !skip.has(v)) { try { queue.push(v.call(o)); calls++ } catch (e) {} }
		}
		queue.push(Object.getPrototypeOf(o));
	}
	board.setVar("walked", seen.size);`

func attacks(fifo string) []attack {
	memory, stack, wall := sandbox.LimitMemory, sandbox.LimitStack, sandbox.LimitWallTime
	return []attack{
		{name: "loop plain", src: `for (;;) {}`, limit: wall},
		{name: "loop in condition", src: `while ((() => true)()) {}`, limit: wall},
		{name: "loop in catch", src: `for (;;) { try { throw 1 } catch (e) { for (;;) {} } }`, limit: wall},
		{name: "loop in finally", src: `try { throw 1 } finally { for (;;) {} }`, limit: wall},
		{name: "loop restarted by finally", src: `for (;;) { try { for (;;) {} } finally { continue } }`, limit: wall},
		{name: "loop in getter", src: `const o = {get x() { for (;;) {} }}; o.x`, limit: wall},
		{name: "loop in native callback", src: `[{toString() { for (;;) {} }}].join()`, limit: wall},
		{name: "endless promise chain", src: `function f() { Promise.resolve().then(f) } f()`, limit: wall},
		{name: "endless async function", src: `(async () => { for (;;) { await null } })()`, limit: wall},
		{name: "deep recursion", src: `function f() { return f() + 1 } f()`, limit: stack},
		{name: "recursion that catches", src: `function f() { try { return f() } catch (e) { return f() } } f()`, limit: stack},
		{name: "recursion through natives", src: `[3, 2, 1].sort(function f(a, b) { return [1, 2].sort(f) })`, limit: stack},
		{name: "doubling string", src: `let s = "x"; for (;;) { s += s }`, limit: memory},
		{name: "repeat bomb", src: `"x".repeat(2 ** 30)`, limit: memory},
		{name: "pad bomb", src: `"".padStart(2 ** 30, "ab")`, limit: memory},
		{name: "concat bomb", src: `const s = "x".repeat(1 << 20); s.concat(...Array(100).fill(s))`, limit: memory},
		{name: "join bomb", src: `const s = "x".repeat(1 << 20); Array(200).fill(s).join("")`, limit: memory},
		{name: "split bomb", src: `"x".repeat(1 << 24).split("")`, limit: memory},
		{name: "replace bomb", src: "\"x\".repeat(1 << 13).replace(/x/g, \"$`\")", limit: memory},
		{name: "replace bomb through Symbol.replace", src: "/x/g[Symbol.replace](\"x\".repeat(1 << 15), \"$`\")", limit: memory},
		{name: "replace bomb through replaceAll", src: "\"x\".repeat(1 << 13).replaceAll(/x/g, \"$`$`\")", limit: memory},
		{name: "regexp split bomb", src: `"xy".repeat(1 << 23).split(/(?=x)/)`, limit: memory},
		{name: "regexp split bomb through Symbol.split", src: `/(?=x)/[Symbol.split]("xy".repeat(1 << 23))`, limit: memory},
		{name: "huge array fill", src: `new Array(2 ** 31).fill(0)`, limit: memory},
		{name: "sparse array sort", src: `const a = []; a.length = 1e9; a.sort()`, limit: memory},
		{name: "array push loop", src: `const a = []; for (;;) { a.push({n: a.length, pad: new Array(64).fill(0)}) }`, limit: memory},
		{name: "spread of a huge sparse array", src: `const a = []; a.length = 2 ** 30; const b = [...a]`, limit: memory},
		{name: "call spread of a huge sparse array", src: `const a = []; a.length = 2 ** 30; Math.max(...a)`, limit: memory},
		{name: "new spread of a huge sparse array", src: `const a = []; a.length = 2 ** 30; new Array(...a)`, limit: memory},
		{name: "spread of a generator", src: `function* g() { for (;;) yield {big: new Array(32).fill(1)} } [...g()]`, limit: memory},
		{name: "typed array bomb", src: `new Float64Array(2 ** 28)`, limit: memory},
		{name: "array buffer bomb", src: `new ArrayBuffer(2 ** 31)`, limit: memory},
		{name: "apply bomb", src: `Math.max.apply(null, {length: 2 ** 30})`, limit: memory},
		{name: "object spread of a string", src: `({..."x".repeat(1 << 22)})`, limit: memory},
		{name: "spread guard hidden by the global object", src: `Object.defineProperty(globalThis, "\x00spread", {value: (x) => x}); ({..."x".repeat(1 << 22)})`, kind: fault.Internal},
		{name: "array spread guard hidden by the global object", src: `Object.defineProperty(globalThis, "\x00spreadArray", {value: (x) => x}); const a = []; a.length = 2 ** 30; [...a]`, kind: fault.Internal},
		{name: "object keys of a string", src: `Object.keys("x".repeat(1 << 22))`, limit: memory},
		{name: "for in over a string", src: `for (const k in "x".repeat(1 << 22)) {}`, limit: memory},
		{name: "json nesting bomb", src: `JSON.parse("[".repeat(1e6) + "]".repeat(1e6))`, limit: stack},
		{name: "json deep value", src: `let a = []; for (let i = 0; i < 1e5; i++) { a = [a] } JSON.stringify(a)`, limit: stack},
		{name: "json output bomb", src: `const s = "x".repeat(1 << 20); JSON.stringify(Array(500).fill(s))`, limit: memory},
		{name: "object rest from a string", src: `const {...r} = "x".repeat(1 << 22)`, limit: memory},
		{name: "object rest in a parameter", src: `function f({...r}) { return r } f("x".repeat(1 << 22))`, kind: fault.Validation},
		{name: "object rest in a nested pattern", src: `const {a: {...r}} = {a: "x".repeat(1 << 22)}`, kind: fault.Validation},
		{name: "long prototype chain", src: `let o = {}; for (let i = 0; i < 2e5; i++) { o = Object.create(o) } o.missing`},
		{name: "growing prototype chain", src: `let o = {}; for (;;) { o = Object.create(o) }`, limit: memory},
		{name: "json parse of a long text", src: `JSON.parse("[" + "1,".repeat(4e6) + "1]")`, limit: memory},
		{name: "sort without a comparator", src: `new Array(1e6).fill(1).sort()`, limit: memory},
		{name: "proxy chain", src: `let p = {}; for (;;) { p = new Proxy(p, {}) }`, limit: memory},
		{name: "bind chain", src: `let f = () => 1; for (;;) { f = f.bind(null) }`, limit: memory},
		{name: "promise flood", src: `for (;;) { Promise.resolve().then(() => {}) }`, limit: memory},
		{name: "symbol registry flood", src: `for (let i = 0; ; i++) { Symbol.for("s" + i) }`, limit: memory},
		{name: "catastrophic regexp", src: `/^(a+)+\1$/.test("a".repeat(40) + "!")`, kind: fault.BudgetExceeded},
		{name: "catastrophic regexp in replace", src: `"x".repeat(40).replace(/^(x+x+)+y\1/, "")`, kind: fault.BudgetExceeded},
		{name: "event flood", src: `for (;;) { try { host.emit("token", "t") } catch (e) {} }`, limit: sandbox.LimitEvents},
		{name: "oversized abi value", src: `host.emit("token", "x".repeat(2 << 20))`, limit: sandbox.LimitValueBytes},
		{name: "oversized board value", src: `board.setVar("x", "x".repeat(2 << 20))`, limit: sandbox.LimitValueBytes},
		{name: "ungranted capability", src: `host.askUser({parts: [{type: "text", text: "hi"}]})`, kind: fault.PolicyDenied},
		{name: "forged subject", src: `host.publish("*", {})`, kind: fault.Validation, grants: []string{agent.CapPublish}},
		{name: "publish outside the run", src: `host.publish("agent.run.other.end", {forged: true})`,
			grants: []string{agent.CapPublish}, check: confinedEvents},
		{name: "prototype pollution", src: `Object.prototype.polluted = 1; Array.prototype.map = null; JSON.parse = null`},
		{name: "escape through constructors", src: escapeProbe, check: nothingFound},
		{name: "global walk", src: globalWalk, check: walkedSome},
		{name: "with statement", src: `with ({}) {}`, kind: fault.Validation},
		{name: "with statement in eval", src: `eval("with ({}) {}")`, kind: fault.Internal},
		{name: "async function constructor", src: `(async function () {}).constructor("return 1")`, kind: fault.Internal},
		{name: "source map file read", src: "Function(\"//# sourceMappingURL=" + fifo + "\")()\n//# sourceMappingURL=" + fifo},
	}
}

func confinedEvents(t *testing.T, res *attackResult) {
	evs := res.host.Events()
	require.Len(t, evs, 1)
	assert.Equal(t, "agent.run."+sandboxtest.RunID+"."+hostabi.CustomSegment+".agent.run.other.end", evs[0].Subject)
}

func nothingFound(t *testing.T, res *attackResult) {
	assert.Equal(t, []any{}, res.board.Vars["found"])
}

func walkedSome(t *testing.T, res *attackResult) {
	n, _ := res.board.Vars["walked"].(float64)
	assert.Greater(t, n, float64(100))
}

// rss returns the process's resident and peak resident set sizes in
// bytes (Linux), or zeros.
func rss() (now, peak int64) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			now = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return now, peak
}

// resetPeak returns memory to the OS and restarts the peak RSS count.
func resetPeak() {
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// Each hostile script ends with the error it must end with, within its
// limit; the process's peak RSS stays under a generous bound; and the next
// call on the same runtime succeeds.
// REF 9.2
// REF 9.3
// REF 9.4
// REF 9.7
// REF 9.M1 (a memory limit for goja: the guarded built-ins and the heap watchdog)
// REF 9.M2 (no fuel: a wall-time stop that no script construct escapes)
// REF 9.M5 (host.publish confined to the run's own namespace)
// REF 9.M7 (per-call quotas on events and value sizes)
func TestAdversarialScripts(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "map.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: time.Minute}})
	require.NoError(t, err)
	defer rt.Close()
	all := attacks(fifo)
	require.GreaterOrEqual(t, len(all), 25)
	for _, a := range all {
		t.Run(a.name, func(t *testing.T) {
			resetPeak()
			before, _ := rss()
			res, err := runAttack(t, rt, a)
			_, peak := rss()
			t.Logf("peak RSS %d MiB (%d MiB before)", peak>>20, before>>20)
			assert.Less(t, peak, int64(rssBound), "peak RSS")
			switch {
			case a.limit != "":
				sandboxtest.RequireLimit(t, err, a.limit, "attacker")
			case a.kind != nil:
				sandboxtest.RequireKind(t, err, a.kind)
			default:
				require.NoError(t, err)
			}
			if a.check != nil {
				a.check(t, res)
			}
			next := agent.NewBoard()
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "next",
				Script: sandbox.Script{Source: `board.setVar("ok", [].map(x => x).length === 0 && ({}).polluted === undefined)`}}, next), "the next call after %s", a.name)
			assert.Equal(t, true, next.Vars["ok"])
		})
	}
}

func runAttack(t *testing.T, rt *js.Runtime, a attack) (*attackResult, error) {
	t.Helper()
	host := sandboxtest.NewHost(1)
	res := &attackResult{board: agent.NewBoard(), host: host}
	wall := a.wall
	switch {
	case wall != 0:
	case a.limit == sandbox.LimitWallTime:
		wall = time.Second
	default:
		// Room for the limit under test to be the one that stops it.
		wall = 30 * time.Second
	}
	limits := sandbox.Limits{WallTime: wall, MaxEvents: 100}
	run := agent.Run{ID: sandboxtest.RunID, AgentID: "agent", Capabilities: a.grants}
	d := hostabi.NewDispatcher(hostabi.Config{Host: host, Run: run, Node: "attacker", Limits: limits})
	done := make(chan error, 1)
	go func() {
		done <- sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker", Script: sandbox.Script{Source: a.src}, ABI: d, Limits: limits, Run: sandbox.RunInfo{RunID: run.ID, AgentID: run.AgentID}}, res.board)
	}()
	select {
	case err := <-done:
		return res, err
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not stop", a.name)
	}
	return nil, nil
}
