package wasm_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/corral-rt/corral/sandbox/wasm"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// benchGuests are the guests the benchmarks run: a small hand-written
// module (ok.wat: one board write) and the Go suite guest (its noop
// export: decode the input, return).
func benchGuests(b *testing.B) []struct {
	name, entry string
	bin         []byte
} {
	return []struct {
		name, entry string
		bin         []byte
	}{
		{"wat", "run", watModule(&testing.T{}, "ok")},
		{"go", "noop", guests.Build(b, suiteGuest)},
	}
}

// BenchmarkGraphNode is one run of a one-node graph whose node is a wasm
// script: the engine, the dispatcher, the instance (per run for the Go
// guest, per call for the small module) and the call.
func BenchmarkGraphNode(b *testing.B) {
	for _, g := range benchGuests(b) {
		b.Run(g.name, func(b *testing.B) {
			rt, err := wasm.New(wasm.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			doc := &graph.Document{Name: "one", Entry: "n0", Nodes: []graph.Node{{ID: "n0", Type: "script",
				Config: json.RawMessage(`{"runtime": "wasm", "module": {"embed": "guest"}, "entry": "` + g.entry + `"}`)}}}
			e, err := graph.Build(context.Background(), doc, graph.Options{
				Runtimes: map[string]sandbox.Runtime{"wasm": rt}, ScriptRuntimeName: "wasm",
				Logger:      slog.New(slog.DiscardHandler),
				ResolveText: func(context.Context, json.RawMessage) (string, error) { return string(g.bin), nil },
			})
			if err != nil {
				b.Fatal(err)
			}
			run := agent.Run{ID: "run-bench", AgentID: "bench", Attempt: 1}
			if _, err := e.Execute(context.Background(), run, agent.NoopHost{}, agent.NewBoard()); err != nil {
				b.Fatal(err) // compiles the module: not part of a node call
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Execute(context.Background(), run, agent.NoopHost{}, agent.NewBoard()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBareInstantiateCall is the floor of BenchmarkGraphNode: plain
// wazero, the same module compiled once, every import a stub; each
// iteration instantiates (running a Go guest's runtime start), writes an
// input through the guest's allocator, calls the entry and closes.
func BenchmarkBareInstantiateCall(b *testing.B) {
	for _, g := range benchGuests(b) {
		b.Run(g.name, func(b *testing.B) {
			ctx := context.Background()
			r := wazero.NewRuntime(ctx)
			defer r.Close(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, r)
			compiled, err := r.CompileModule(ctx, g.bin)
			if err != nil {
				b.Fatal(err)
			}
			stubImports(ctx, b, r, compiled)
			input := []byte(`{"node":"n0","config":{}}`)
			cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize")
			b.ReportAllocs()
			for b.Loop() {
				mod, err := r.InstantiateModule(ctx, compiled, cfg)
				if err != nil {
					b.Fatal(err)
				}
				stack := []uint64{uint64(len(input))}
				if err := mod.ExportedFunction("corral_alloc").CallWithStack(ctx, stack); err != nil {
					b.Fatal(err)
				}
				mod.Memory().Write(uint32(stack[0]), input)
				if err := mod.ExportedFunction(g.entry).CallWithStack(ctx, []uint64{stack[0], uint64(len(input))}); err != nil {
					b.Fatal(err)
				}
				_ = mod.Close(ctx)
			}
		})
	}
}

// stubImports instantiates every imported module but WASI with functions
// that return zero.
func stubImports(ctx context.Context, b *testing.B, r wazero.Runtime, compiled wazero.CompiledModule) {
	byModule := map[string]wazero.HostModuleBuilder{}
	for _, f := range compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod == wasi_snapshot_preview1.ModuleName {
			continue
		}
		hb, ok := byModule[mod]
		if !ok {
			hb = r.NewHostModuleBuilder(mod)
			byModule[mod] = hb
		}
		hb.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			if len(stack) > 0 {
				stack[0] = 0
			}
		}), f.ParamTypes(), f.ResultTypes()).Export(name)
	}
	for _, hb := range byModule {
		if _, err := hb.Instantiate(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvoke is one Runtime.Invoke: a fresh instance per call
// (fresh), or inside a run begun with BeginRun, where a Go guest's
// instance is reused (run).
func BenchmarkInvoke(b *testing.B) {
	rt, err := wasm.New(wasm.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	for _, g := range benchGuests(b) {
		for _, mode := range []string{"fresh", "run"} {
			b.Run(g.name+"-"+mode, func(b *testing.B) {
				info := sandbox.RunInfo{RunID: "run-" + g.name + "-" + mode}
				if mode == "run" {
					defer rt.BeginRun(context.Background(), info)()
				}
				inv := sandbox.Invocation{Node: "n", Script: sandbox.Script{Module: g.bin, Entry: g.entry}, Run: info,
					Board: *agent.NewBoard()}
				if err := sandbox.InvokeOn(context.Background(), rt, inv, nil); err != nil {
					b.Fatal(err) // compiles the module
				}
				b.ReportAllocs()
				for b.Loop() {
					inv.Board = *agent.NewBoard()
					if err := sandbox.InvokeOn(context.Background(), rt, inv, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkHostCallRoundTrip is 1000 calls of host.random and their
// result fetches in one node call (roundtrip.wat), through a real
// dispatcher; ns/call is the round trip.
func BenchmarkHostCallRoundTrip(b *testing.B) {
	rt, err := wasm.New(wasm.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	bin := watModule(&testing.T{}, "roundtrip")
	host := sandboxtest.NewHost(1)
	run := agent.Run{ID: "r", Capabilities: []string{agent.CapRandom}}
	b.ReportAllocs()
	for b.Loop() {
		d := hostabi.NewDispatcher(hostabi.Config{Host: host, Run: run, Node: "n"})
		if err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n",
			Script: sandbox.Script{Module: bin, Entry: "run"}, ABI: d}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/call")
}

// BenchmarkCompile compiles the Go suite guest in a new wazero runtime:
// cold (no cache) and cached (a compilation cache that has seen it).
func BenchmarkCompile(b *testing.B) {
	bin := guests.Build(b, suiteGuest)
	ctx := context.Background()
	cache := wazero.NewCompilationCache()
	defer cache.Close(ctx)
	for _, mode := range []string{"cold", "cached"} {
		b.Run(mode, func(b *testing.B) {
			cfg := wazero.NewRuntimeConfig()
			if mode == "cached" {
				cfg = cfg.WithCompilationCache(cache)
				warm := wazero.NewRuntimeWithConfig(ctx, cfg)
				if _, err := warm.CompileModule(ctx, bin); err != nil {
					b.Fatal(err)
				}
				_ = warm.Close(ctx)
			}
			for b.Loop() {
				r := wazero.NewRuntimeWithConfig(ctx, cfg)
				if _, err := r.CompileModule(ctx, bin); err != nil {
					b.Fatal(err)
				}
				_ = r.Close(ctx)
			}
		})
	}
}

// BenchmarkCancelToReturn prints how long after its caller's context is
// cancelled a module that loops for ever (loop.wat) returns: p50, p99
// and the most, in microseconds. wazero closes the module on the
// context's end (WithCloseOnContextDone), on the event, and the loop
// checks for it at each back edge.
func BenchmarkCancelToReturn(b *testing.B) {
	rt, err := wasm.New(wasm.Options{Limits: sandbox.Limits{WallTime: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	inv := sandbox.Invocation{Node: "spin", Script: sandbox.Script{Module: watModule(&testing.T{}, "loop"), Entry: "run"}}
	var took []time.Duration
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan time.Time, 1)
		go func() {
			_ = sandbox.InvokeOn(ctx, rt, inv, agent.NewBoard())
			done <- time.Now()
		}()
		time.Sleep(time.Millisecond) // the module loops
		start := time.Now()
		cancel()
		took = append(took, (<-done).Sub(start))
	}
	slices.Sort(took)
	at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Nanoseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(at(1), "max-µs")
	b.ReportMetric(0, "ns/op")
}
