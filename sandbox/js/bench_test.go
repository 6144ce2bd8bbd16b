package js_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
)

// BenchmarkInvokeTrivial is one node call of a one-line script: a fresh
// VM with its guards and globals, a dispatcher, the watchdog.
func BenchmarkInvokeTrivial(b *testing.B) {
	rt, err := js.New(js.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	host := sandboxtest.NewHost(1)
	script := sandbox.Script{Source: `board.setVar("n", (board.getVar("n") || 0) + 1)`}
	board := agent.NewBoard()
	b.ReportAllocs()
	for b.Loop() {
		d := hostabi.NewDispatcher(hostabi.Config{Host: host, Run: agent.Run{ID: "r"}, Node: "n"})
		if err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: script, ABI: d}, board); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFloor10Calls is the floor: ten calls of a script function in
// one VM made once.
func BenchmarkFloor10Calls(b *testing.B) {
	f, err := js.NewFloor()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Call(10); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalCondition is one graph condition.
func BenchmarkEvalCondition(b *testing.B) {
	rt, err := js.New(js.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ev := sandbox.Evaluation{Node: "edge", Expr: `tool_pending == true && __iterations < 10`,
		Vars: map[string]any{"tool_pending": true, "__iterations": 3.0}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rt.Eval(context.Background(), ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVsFloor reports ten node calls, and ten conditions, against
// the floor measured alternately with them, one of each per iteration, so
// that the ratio (x-floor) holds even when other work shares the machine.
func BenchmarkVsFloor(b *testing.B) {
	rt, err := js.New(js.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	host := sandboxtest.NewHost(1)
	board := agent.NewBoard()
	script := sandbox.Script{Source: `board.setVar("n", (board.getVar("n") || 0) + 1)`}
	setX := sandbox.Script{Source: `board.setVar("x", 1)`}
	lazy := &lazyABI{names: hostabi.Names()}
	ev := sandbox.Evaluation{Node: "edge", Expr: `tool_pending == true && __iterations < 10`,
		Vars: map[string]any{"tool_pending": true, "__iterations": 3.0}}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"invoke", func() error {
			d := hostabi.NewDispatcher(hostabi.Config{Host: host, Run: agent.Run{ID: "r"}, Node: "n"})
			return sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: script, ABI: d}, board)
		}},
		{"invoke-lazy", func() error {
			// As the graph engine calls a script node: an ABI whose
			// Functions is a fixed slice and whose dispatcher would be made
			// at the first host call (none here). The engine makes one such
			// ABI per step, an allocation of its own: here one serves every
			// call, so that the figure is the runtime's.
			return sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "x", Script: setX, ABI: lazy}, board)
		}},
		{"eval", func() error { _, err := rt.Eval(context.Background(), ev); return err }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f, err := js.NewFloor()
			if err != nil {
				b.Fatal(err)
			}
			var calls, floor time.Duration
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				if _, err := f.Call(10); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				for range 10 {
					if err := tc.call(); err != nil {
						b.Fatal(err)
					}
				}
				calls, floor, n = calls+time.Since(t1), floor+t1.Sub(t0), n+1
			}
			b.ReportMetric(float64(calls)/float64(floor), "x-floor")
			b.ReportMetric(float64(floor.Nanoseconds())/float64(n), "floor-ns")
			b.ReportMetric(float64(calls.Nanoseconds())/float64(n), "calls-ns")
		})
	}
}

// lazyABI is a host ABI whose function names are made once and whose
// dispatcher is made at its first call.
type lazyABI struct {
	names []string
	once  sync.Once
	cfg   hostabi.Config
	d     *hostabi.Dispatcher
}

func (a *lazyABI) Functions() []string { return a.names }

func (a *lazyABI) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	a.once.Do(func() { a.d = hostabi.NewDispatcher(a.cfg) })
	return a.d.Call(ctx, name, args)
}

// BenchmarkInvokeSourceSize is a node call of the same one-line script
// padded with a comment to 4 KiB and 32 KiB: the compiled program is found
// by where the source is, so the call costs as much as the unpadded one
// (compare the sub-benchmarks of one run).
func BenchmarkInvokeSourceSize(b *testing.B) {
	for _, size := range []int{0, 4 << 10, 32 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			rt, err := js.New(js.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			script := sandbox.Script{Source: `board.setVar("x", 1)` + "\n//" + strings.Repeat("c", size)}
			board := agent.NewBoard()
			b.ReportAllocs()
			for b.Loop() {
				if err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: script}, board); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInvokeConfig is a node call of a script reading a config of a
// few keys: made into a script value at each call (each-call), or kept by
// the VM because the caller marks it static, as the graph engine does for
// a config without ${board} references (static). Compare the two of one
// run.
func BenchmarkInvokeConfig(b *testing.B) {
	rt, err := js.New(js.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	board := agent.NewBoard()
	cfg := map[string]any{"label": "bug", "threshold": 3.0, "tags": []any{"a", "b"}, "route": map[string]any{"to": "triage"}}
	script := sandbox.Script{Source: `board.setVar("x", config.threshold)`}
	for _, static := range []bool{false, true} {
		name := "each-call"
		if static {
			name = "static"
		}
		b.Run(name, func(b *testing.B) {
			inv := sandbox.Invocation{Node: "n", Script: script, Board: *board, Config: cfg,
				ABI: &lazyABI{names: hostabi.Names()}}
			if static {
				inv.Script.Config, inv.Config = cfg, nil
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rt.Invoke(context.Background(), inv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvalBoard is a condition over a board of 30 vars (numbers,
// strings and nested objects) that names two of them: made with only the
// vars it names (by-name), and, as the baseline of the same run, made to
// name globalThis as well, which gives it every var (every-var).
func BenchmarkEvalBoard(b *testing.B) {
	rt, err := js.New(js.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	vars := map[string]any{"tool_pending": true, "__iterations": 3.0}
	for i := range 28 {
		switch i % 3 {
		case 0:
			vars[fmt.Sprintf("count_%d", i)] = float64(i)
		case 1:
			vars[fmt.Sprintf("note_%d", i)] = fmt.Sprintf("step %d looked at %d sources", i, i+2)
		default:
			vars[fmt.Sprintf("result_%d", i)] = map[string]any{"score": 0.5, "tags": []any{"a", "b"}, "meta": map[string]any{"rank": float64(i)}}
		}
	}
	for _, tc := range []struct{ name, expr string }{
		{"by-name", `tool_pending == true && __iterations < 10`},
		{"every-var", `(0, globalThis), tool_pending == true && __iterations < 10`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ev := sandbox.Evaluation{Node: "edge", Expr: tc.expr, Vars: vars}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rt.Eval(context.Background(), ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCancelToReturn prints how long after its caller's context is
// cancelled a call that spins (for (;;) {}) returns: p50, p99 and the
// most, in microseconds. The stop comes on the event (context.AfterFunc),
// not at a tick of the watchdog.
func BenchmarkCancelToReturn(b *testing.B) {
	rt, err := js.New(js.Options{PoolSize: 1, Limits: sandbox.Limits{WallTime: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	started := make(chan struct{}, 1)
	inv := sandbox.Invocation{Node: "spin", Script: sandbox.Script{Source: `host.log("info", "spinning"); for (;;) {}`},
		ABI: startABI(started)}
	var took []time.Duration
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan time.Time, 1)
		go func() {
			_ = sandbox.InvokeOn(ctx, rt, inv, agent.NewBoard())
			done <- time.Now()
		}()
		<-started
		time.Sleep(100 * time.Microsecond) // the call spins
		start := time.Now()
		cancel()
		took = append(took, (<-done).Sub(start))
		// The stopped VM is dropped and its replacement prepared on the
		// runtime's goroutine: let it finish, so that the next stop is
		// measured on an idle machine, not behind it (with both cores
		// busy, the goroutine context.AfterFunc starts waits for the
		// scheduler's 10 ms time slice).
		b.StopTimer()
		time.Sleep(20 * time.Millisecond)
		b.StartTimer()
	}
	reportDistribution(b, took)
}

// startABI is a host ABI of one function, log, which signals started.
type startABI chan struct{}

func (startABI) Functions() []string { return []string{"log"} }

func (a startABI) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	a <- struct{}{}
	return json.RawMessage("null"), nil
}

// reportDistribution reports p50, p99 and the most of took, in µs.
func reportDistribution(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Nanoseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(at(1), "max-µs")
	b.ReportMetric(0, "ns/op")
}
