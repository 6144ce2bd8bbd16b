package js_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inBoundedChild is inSubtestChild with a bound on how long the child may
// run: a case that would hang the call for minutes fails the test instead
// of the test binary's timeout.
func inBoundedChild(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	if os.Getenv(subtestChildEnv) != "" {
		return true
	}
	if testing.Short() {
		t.Skip("runs a child process")
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), subtestChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "the child did not end within %v:\n%s", timeout, tail(string(out)))
	require.NoError(t, err, "the child process failed:\n%s", tail(string(out)))
	require.Contains(t, string(out), "--- PASS: "+parts[0][1:len(parts[0])-1], "the child ran no test:\n%s", tail(string(out)))
	return false
}

// nativeRecursion is a script whose built-ins call one another through
// getters and methods it set, with no frame of the VM's between them, and
// the limit that must stop it.
type nativeRecursion struct {
	name, src, limit string
}

func nativeRecursions() []nativeRecursion {
	stack, wall := sandbox.LimitStack, sandbox.LimitWallTime
	dag := `let a = [1]; for (let i = 0; i < 40; i++) a = [a, a]; `
	return []nativeRecursion{
		{"Error.prototype.toString as the getter of name",
			`const o = {}; Object.defineProperty(o, "name", {get: Error.prototype.toString}); o.name`, stack},
		{"Object.prototype.toLocaleString as toString",
			`const o = {}; o.toString = Object.prototype.toLocaleString; String(o)`, stack},
		{"Object.prototype.toString as the getter of Symbol.toStringTag",
			`const o = {}; Object.defineProperty(o, Symbol.toStringTag, {get: Object.prototype.toString}); String(o)`, stack},
		{"Array.prototype.toString as join",
			`const o = {length: 1}; o.join = Array.prototype.toString; Array.prototype.toString.call(o)`, stack},
		{"RegExp flags through its own getter",
			`const o = {}; Object.defineProperty(o, "global", {get: Object.getOwnPropertyDescriptor(RegExp.prototype, "flags").get}); o.global`, stack},
		{"join of shared nested arrays", dag + `a.join()`, wall},
		{"toString of shared nested arrays", dag + `String(a)`, wall},
		{"toLocaleString of shared nested arrays", dag + `a.toLocaleString()`, wall},
		{"proxies whose handler is the proxy before", `let p = {}; for (let i = 0; i < 40; i++) p = new Proxy(p, p); p.x`, wall},
		{"proxies whose handler inherits from the proxy before",
			`let p = {}; for (let i = 0; i < 40; i++) p = new Proxy(p, Object.create(p)); "x" in p`, wall},
		{"revocable proxies whose handler is the proxy before",
			`let p = {}; for (let i = 0; i < 40; i++) p = Proxy.revocable(p, p).proxy; p.x = 1`, wall},
	}
}

// REF 9.M13 (native functions count how deep they run inside one another
// and stop with the call)
// A recursion through built-ins alone — no frame of the VM's between
// them — ends with its limit instead of overflowing the Go stack (which
// ends the process: each case runs in a child) or running for minutes
// past its wall time; the peak RSS stays bounded and the next call on the
// same runtime succeeds.
func TestNativeRecursionStops(t *testing.T) {
	for _, a := range nativeRecursions() {
		t.Run(a.name, func(t *testing.T) {
			if !inBoundedChild(t, 2*time.Minute) {
				return
			}
			wall := 30 * time.Second
			if a.limit == sandbox.LimitWallTime {
				wall = time.Second
			}
			rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: wall}})
			require.NoError(t, err)
			defer rt.Close()
			resetPeak()
			err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker",
				Script: sandbox.Script{Source: a.src}}, agent.NewBoard())
			sandboxtest.RequireLimit(t, err, a.limit, "attacker")
			_, peak := rss()
			assert.Less(t, peak, int64(rssBound), "peak RSS")
			next := agent.NewBoard()
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "next",
				Script: sandbox.Script{Source: `board.setVar("ok", [[1, 2], [3]].join(";") + String(new Error("e")))`}}, next))
			assert.Equal(t, "1,2;3Error: e", next.Vars["ok"])
		})
	}
}

// REF 9.M13 (a prototype cycle through a proxy is refused)
// A prototype that would close a cycle through a proxy — an object whose
// prototype is a proxy of itself, a proxy's handler whose prototype is
// that proxy — is refused as a cycle without proxies is: a TypeError from
// Object.setPrototypeOf and the __proto__ setter, false from
// Reflect.setPrototypeOf. Accepted, a lookup recursed in Go until the
// stack overflowed and ended the process (each case runs in a child).
func TestPrototypeCycleThroughProxyRefused(t *testing.T) {
	for name, set := range map[string]string{
		"Object.setPrototypeOf":  `Object.setPrototypeOf(o, p)`,
		"the __proto__ setter":   `o.__proto__ = p`,
		"Reflect.setPrototypeOf": `if (!Reflect.setPrototypeOf(o, p)) throw new TypeError("refused")`,
	} {
		for shape, build := range map[string]string{
			"target":          `const o = {}; const p = new Proxy(o, {});`,
			"handler":         `const o = {}; const p = new Proxy({}, o);`,
			"proxy of proxy":  `const o = {}; const p = new Proxy(new Proxy(o, {}), {});`,
			"through a chain": `const o = {}; const p = Object.create(Object.create(new Proxy(o, {})));`,
			"proxy as target": `const t = {}; const o = new Proxy(t, {}); const p = new Proxy(Object.create(t), {});`,
		} {
			t.Run(name+"/"+shape, func(t *testing.T) {
				if !inBoundedChild(t, 2*time.Minute) {
					return
				}
				rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: 30 * time.Second}})
				require.NoError(t, err)
				defer rt.Close()
				b := agent.NewBoard()
				err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker",
					Script: sandbox.Script{Source: build + `
						let refused = false;
						try { ` + set + ` } catch (e) { refused = e instanceof TypeError }
						board.setVar("refused", refused);
						board.setVar("x", String(p.x) + String(o.x) + ("x" in p));`}}, b)
				require.NoError(t, err)
				assert.Equal(t, true, b.Vars["refused"])
				assert.Equal(t, "undefinedundefinedfalse", b.Vars["x"])
			})
		}
	}
	t.Run("no cycle", func(t *testing.T) {
		rt := mustNew(t, js.Options{})
		b := agent.NewBoard()
		require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n",
			Script: sandbox.Script{Source: `
				const base = {y: 2}; const p = new Proxy(base, {});
				const o = Object.setPrototypeOf({}, p); const q = {}; q.__proto__ = p;
				board.setVar("ok", o.y + q.y + (Reflect.setPrototypeOf({}, p) ? 1 : 0));`}}, b))
		assert.Equal(t, float64(5), b.Vars["ok"])
	})
}

// A proxy behaves as before its trap lookups were counted: a trap runs
// with this inheriting from its handler, a handler changed after the proxy
// was made is seen, revocation and calls work.
func TestProxyTrapsAsBefore(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	b := agent.NewBoard()
	require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n",
		Script: sandbox.Script{Source: `
			const h = {get(t, k) { return this.pre + k }, pre: "v"};
			const p = new Proxy({}, h);
			const out = [p.a];
			h.get = undefined; out.push(String(p.a));
			h.has = () => true; out.push("zz" in p);
			out.push(new Proxy(function () { return 3 }, {})());
			const {proxy, revoke} = Proxy.revocable({a: 1}, {});
			out.push(proxy.a); revoke();
			try { proxy.a } catch (e) { out.push(e instanceof TypeError) }
			try { Proxy({}, {}) } catch (e) { out.push(e instanceof TypeError) }
			out.push(typeof Proxy.revocable, Proxy.name);
			board.setVar("out", out);`}}, b))
	assert.Equal(t, []any{"va", "undefined", true, float64(3), float64(1), true, true, "function", "Proxy"}, b.Vars["out"])
}

// REF 9.M13 (turning a thrown value into an error runs no script code)
// A thrown value is turned into the call's error without running script
// code: a thrown proxy whose traps loop for ever, or a thrown error whose
// prototype lookup does, ends the call with an internal script error, and
// the next call succeeds. (errors.As on the engine's exception ran the
// proxy's getPrototypeOf trap after the call had ended, where no stop
// reached it, and the caller hung for ever: each case runs in a child.)
func TestThrownValueRunsNoCode(t *testing.T) {
	for name, src := range map[string]string{
		"a proxy":          `throw new Proxy({}, {get() { for (;;) {} }, getPrototypeOf() { for (;;) {} }})`,
		"a proxy of Error": `throw new Proxy(new Error("x"), {getPrototypeOf() { for (;;) {} }})`,
		"in eval":          `eval("throw new Proxy({}, {getPrototypeOf() { for (;;) {} }})")`,
	} {
		t.Run(name, func(t *testing.T) {
			if !inBoundedChild(t, 2*time.Minute) {
				return
			}
			rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: time.Second}})
			require.NoError(t, err)
			defer rt.Close()
			err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker",
				Script: sandbox.Script{Source: src}}, agent.NewBoard())
			var se *sandbox.ScriptError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "attacker", se.Node)
			next := agent.NewBoard()
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "next",
				Script: sandbox.Script{Source: `try { throw new Error("e") } catch (e) { board.setVar("ok", e.message) }`}}, next))
			assert.Equal(t, "e", next.Vars["ok"])
		})
	}
}
