package js_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
)

// tinyLimits keep one fuzz input short and small.
func tinyLimits() sandbox.Limits {
	return sandbox.Limits{WallTime: 100 * time.Millisecond, MemoryBytes: 8 << 20, StackDepth: 32,
		MaxValueBytes: 4096, MaxEvents: 10, MaxEventBytes: 4096, MaxLogBytes: 1024}
}

// checkEnd fails t when a call did not end within a bound or ended with
// an error that carries no fault kind.
func checkEnd(t *testing.T, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil && fault.KindOf(err) == nil {
			var le *sandbox.LimitError
			if !errors.As(err, &le) {
				t.Fatalf("%s: an error without a kind: %v", what, err)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the call did not end", what)
	}
}

func fuzzSeeds(f *testing.F) {
	for _, s := range sandboxtest.JSPrograms() {
		f.Add(s.Source)
	}
	for _, s := range []string{`for(;;){}`, `"x".repeat(1e9)`, `({..."ab".repeat(1e6)})`, `JSON.parse("[".repeat(1e5))`,
		`/^(a+)+\1$/.test("a".repeat(30)+"!")`, `eval("1+1")`, `Function("a", "return a")(1)`, `}{`, "`${", `\u0000`} {
		f.Add(s)
	}
}

// FuzzInvokeSource: no source, however malformed or hostile, panics the
// host or keeps a call running past its limits; every error has a kind.
func FuzzInvokeSource(f *testing.F) {
	fuzzSeeds(f)
	rt, err := js.New(js.Options{Limits: tinyLimits()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = rt.Close() })
	f.Fuzz(func(t *testing.T, src string) {
		done := make(chan error, 1)
		go func() {
			done <- sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "fuzz", Script: sandbox.Script{Source: src}, ABI: fuzzABI()}, agent.NewBoard())
		}()
		checkEnd(t, "invoke", done)
	})
}

// FuzzEval: the same for expressions, over a few vars.
func FuzzEval(f *testing.F) {
	fuzzSeeds(f)
	for _, s := range []string{`a == 1 && b.c`, `a +`, `1); (2`, `[...Array(1e9)]`, `b.c.d.e`} {
		f.Add(s)
	}
	rt, err := js.New(js.Options{Limits: tinyLimits()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = rt.Close() })
	vars := map[string]any{"a": 1.0, "b": map[string]any{"c": []any{"x"}}}
	f.Fuzz(func(t *testing.T, expr string) {
		done := make(chan error, 1)
		go func() {
			_, err := rt.Eval(context.Background(), sandbox.Evaluation{Node: "fuzz", Expr: expr, Vars: vars})
			done <- err
		}()
		checkEnd(t, "eval", done)
	})
}

// fuzzABI is a real dispatcher over a deterministic host that grants
// everything.
func fuzzABI() sandbox.ABI {
	caps := []string{agent.CapSteer, agent.CapPublish, agent.CapEmit, agent.CapInterrupt, agent.CapAskUser,
		agent.CapUsage, agent.CapClock, agent.CapRandom, agent.CapLog}
	return hostabi.NewDispatcher(hostabi.Config{Host: sandboxtest.NewHost(1), Node: "fuzz",
		Run: agent.Run{ID: "fuzz", AgentID: "agent", Capabilities: caps}, Limits: tinyLimits()})
}
