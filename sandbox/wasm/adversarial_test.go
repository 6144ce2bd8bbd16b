package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/corral-rt/corral/sandbox/wasm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attack is a hostile module and how it must end: with a limit, with an
// error of a kind, or without an error.
type attack struct {
	name   string
	module string // a .wat module of testdata/wasm/wat, or "" for the Go suite guest
	entry  string
	limit  string      // the LimitError it must end with, or ""
	kind   *fault.Kind // else the kind it must end with; nil: no error
	text   string      // the error must contain it
	grants []string
	check  func(t *testing.T, host *sandboxtest.Host)
}

func attacks() []attack {
	memory, stack, wall := sandbox.LimitMemory, sandbox.LimitStack, sandbox.LimitWallTime
	return []attack{
		{name: "infinite loop", module: "loop", entry: "run", limit: wall},
		{name: "loop in the start function", module: "start_loop", entry: "run", limit: wall},
		{name: "memory.grow bomb", module: "grow_bomb", entry: "run", limit: memory},
		{name: "one huge memory.grow", module: "grow_huge", entry: "run", limit: memory},
		{name: "memory declared past the limit", module: "memory_declared", entry: "run", limit: memory},
		{name: "declared minimum past the limit, filled during instantiate", module: "memory_min_runs", entry: "run", limit: memory},
		{name: "start-routine module growing past the limit", module: "heavy_grow", entry: "run", limit: memory},
		{name: "realtime clock read in a loop", module: "clock_loop", entry: "run", limit: wall, grants: []string{agent.CapClock}},
		{name: "unreachable", module: "unreachable", entry: "run", kind: fault.Internal, text: "unreachable"},
		{name: "recursion", module: "recursion", entry: "run", limit: stack},
		{name: "recursion with large frames", module: "deep_recursion", entry: "run", limit: stack},
		{name: "argument pointer past the end", module: "args_oob", entry: "ptr_past_end", kind: fault.Validation, text: "host call failed"},
		{name: "argument range across the end", module: "args_oob", entry: "range_across_end", kind: fault.Validation, text: "host call failed"},
		{name: "argument length huge", module: "args_oob", entry: "length_huge", limit: sandbox.LimitValueBytes},
		{name: "result fetched past the end", module: "result_oob", entry: "dst_past_end", kind: fault.Validation, text: "host call failed",
			grants: []string{agent.CapClock}},
		{name: "result fetched with a wrong length", module: "result_oob", entry: "wrong_length", kind: fault.Validation,
			text: "host call failed", grants: []string{agent.CapClock}},
		{name: "allocator answers out of bounds", module: "alloc_oob", entry: "run", kind: fault.Internal, text: "corral_alloc"},
		{name: "allocator traps", module: "alloc_trap", entry: "run", kind: fault.Internal, text: "unreachable"},
		{name: "wrong abi version", module: "abi_version", entry: "run", kind: fault.Validation, text: "version 2, this host speaks version 1"},
		{name: "missing allocator", module: "missing_export", entry: "run", kind: fault.Validation, text: "corral_alloc"},
		{name: "missing entry", module: "ok", entry: "nope", kind: fault.Validation, text: `"nope"`},
		{name: "entry of the wrong type", module: "entry_type", entry: "run", kind: fault.Validation, text: "(i32) -> ()"},
		{name: "unknown host import", module: "unknown_import", entry: "run", kind: fault.Validation, text: "exec"},
		{name: "no file system", module: "open_file", entry: "run"},
		{name: "event flood", module: "event_flood", entry: "run", limit: sandbox.LimitEvents},
		{name: "malformed calls forever", module: "signal_loop", entry: "run", limit: wall, grants: []string{agent.CapPublish}},
		{name: "not a module", module: "-", entry: "run", kind: fault.Validation},
		{name: "go guest doubling a string", entry: "double_string", limit: memory},
		{name: "go guest recursion", entry: "recurse", limit: stack},
		{name: "go guest panic", entry: "throw", kind: fault.Internal, text: "boom"},
	}
}

func watModule(t *testing.T, name string) []byte {
	t.Helper()
	if name == "-" {
		return []byte("\x00asm\x01\x00\x00\x00garbage")
	}
	bin, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wasm", "wat", name+".wasm"))
	require.NoError(t, err)
	return bin
}

// Each hostile module ends with the error it must end with; the process's
// peak RSS stays under a generous bound; the next call on the same runtime
// succeeds.
// REF 9.M1 (a per-instance memory limit in pages)
// REF 9.M2 (a looping guest stops: the instance closes at the wall time)
// REF 9.M3 (no WASI filesystem, environment or arguments)
// REF 9.M7 (per-call quotas on events and value sizes)
func TestAdversarialModules(t *testing.T) {
	rt, err := wasm.New(wasm.Options{Limits: sandbox.Limits{WallTime: time.Minute}})
	require.NoError(t, err)
	defer rt.Close()
	suite := guests.Build(t, suiteGuest)
	// Compile the Go guest first (minutes under the race detector): the
	// attacks' bound is for running, not compiling.
	require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "warm",
		Script: sandbox.Script{Module: suite, Entry: "noop"}}, agent.NewBoard()))
	ok := watModule(t, "ok")
	all := attacks()
	require.GreaterOrEqual(t, len(all), 15)
	for _, a := range all {
		t.Run(a.name, func(t *testing.T) {
			bin := suite
			if a.module != "" {
				bin = watModule(t, a.module)
			}
			resetPeak()
			before, _ := rss()
			host, err := runAttack(t, rt, a, bin)
			_, peak := rss()
			t.Logf("peak RSS %d MiB (%d MiB before): %v", peak>>20, before>>20, err)
			assert.Less(t, peak, int64(rssBound), "peak RSS")
			switch {
			case a.limit != "":
				sandboxtest.RequireLimit(t, err, a.limit, "attacker")
			case a.kind != nil:
				sandboxtest.RequireKind(t, err, a.kind)
				assert.Contains(t, err.Error(), "attacker")
			default:
				require.NoError(t, err)
			}
			if a.text != "" {
				assert.Contains(t, err.Error(), a.text)
			}
			if a.check != nil {
				a.check(t, host)
			}
			next := agent.NewBoard()
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "next",
				Script: sandbox.Script{Module: ok, Entry: "run"}}, next), "the next call after %s", a.name)
			assert.Equal(t, true, next.Vars["ok"])
		})
	}
}

func runAttack(t *testing.T, rt *wasm.Runtime, a attack, bin []byte) (*sandboxtest.Host, error) {
	t.Helper()
	host := sandboxtest.NewHost(1)
	wall := 30 * time.Second
	if a.limit == sandbox.LimitWallTime {
		wall = time.Second
	}
	limits := sandbox.Limits{WallTime: wall, MaxEvents: 100, MemoryBytes: 32 << 20, StackDepth: 64}
	grants := a.grants
	if grants == nil {
		grants = hostabi.DefaultGrants()
	}
	run := agent.Run{ID: sandboxtest.RunID, AgentID: "agent", Capabilities: grants}
	d := hostabi.NewDispatcher(hostabi.Config{Host: host, Run: run, Node: "attacker", Limits: limits})
	done := make(chan error, 1)
	go func() {
		done <- sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker",
			Script: sandbox.Script{Module: bin, Entry: a.entry}, ABI: d, Limits: limits,
			Run: sandbox.RunInfo{RunID: run.ID, AgentID: run.AgentID}}, agent.NewBoard())
	}()
	select {
	case err := <-done:
		return host, err
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not stop", a.name)
	}
	return nil, nil
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

// stack_depth does not bound a module's call stack (docs/sandbox.md): a
// runaway recursion ends at the engine's own ceiling, labelled a
// stack_depth LimitError, having raised the process's peak RSS by at most
// what that ceiling costs.
func TestRecursionEndsAtTheEnginesCeiling(t *testing.T) {
	rt, err := wasm.New(wasm.Options{Limits: sandbox.Limits{WallTime: time.Minute, MemoryBytes: 1 << 20, StackDepth: 100}})
	require.NoError(t, err)
	defer rt.Close()
	for _, name := range []string{"recursion", "deep_recursion"} {
		resetPeak()
		before, _ := rss()
		err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "deep",
			Script: sandbox.Script{Module: watModule(t, name), Entry: "run"}}, agent.NewBoard())
		_, peak := rss()
		t.Logf("%s: peak RSS %d MiB (%d MiB before)", name, peak>>20, before>>20)
		sandboxtest.RequireLimit(t, err, sandbox.LimitStack, "deep")
		assert.Less(t, peak-before, int64(stackRSSGrowth), "%s: peak RSS growth", name)
	}
}
