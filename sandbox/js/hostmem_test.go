package js_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/require"
)

// The tests here run their work in a child process of the test binary: a
// failure of the memory guards ends (or would end) that process, which
// then fails the test rather than the test binary. The parent watches the
// child's resident memory and kills it past a bound, so that a guard that
// fails cannot take the machine with it.

// childEnv names the test a child process runs.
const childEnv = "CORRAL_JS_CHILD"

// inChild reports whether this process is the child that runs name.
func inChild(name string) bool { return os.Getenv(childEnv) == name }

// runChild runs the test name in a child process, fails t when the child
// fails, ends by a signal or passes bound bytes of resident memory, and
// returns the child's output.
func runChild(t *testing.T, name string, timeout time.Duration, bound int64) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a child process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	var peak atomic.Int64
	var over atomic.Bool
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			now := childRSS(cmd.Process.Pid)
			peak.Store(max(peak.Load(), now))
			if now > bound {
				over.Store(true)
				_ = cmd.Process.Kill()
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	wg.Wait()
	t.Logf("child %s: peak RSS seen %d MiB", name, peak.Load()>>20)
	require.False(t, over.Load(), "the child passed %d MiB of resident memory:\n%s", bound>>20, tail(out.String()))
	require.NoError(t, err, "the child process failed:\n%s", tail(out.String()))
	return out.String()
}

// childRSS reads a process's resident memory, in bytes (Linux), or 0.
func childRSS(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// tail is the end of a child's output, for a failure message.
func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// Innocent work: recursion, JSON, building objects.
var innocentScripts = []string{
	`function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2) } board.setVar("r", f(16))`,
	`let o = {a: []}; for (let i = 0; i < 2000; i++) o.a.push({i, s: "x" + i});
	 board.setVar("r", JSON.parse(JSON.stringify(o)).a.length)`,
	`let m = {}; for (let i = 0; i < 3000; i++) m["k" + i] = {v: i, w: [i, i]};
	 board.setVar("r", Object.keys(m).length)`,
}

// Memory bombs: a doubling string, an array and a Map that grow for ever.
var bombScripts = []string{
	`let s = "x"; for (;;) s += s`,
	`let a = []; for (;;) a.push({x: a.length, y: "yy"})`,
	`let m = new Map(); for (let i = 0; ; i++) m.set(i, {i})`,
}

// invokeAs runs src as a call of tenant's node on rt.
func invokeAs(ctx context.Context, rt *js.Runtime, tenant, node, src string, wall time.Duration) error {
	return sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: node, Script: sandbox.Script{Source: src},
		Limits: sandbox.Limits{WallTime: wall}, Run: sandbox.RunInfo{Tenant: tenant, RunID: "run-" + tenant}}, agent.NewBoard())
}

// mixRound runs bomb as tenant a's call while tenants b, c and d run
// innocent work in a loop until it ends; it returns the bomb's error and
// the innocent calls made and stopped.
func mixRound(rt *js.Runtime, bomb string, round int) (bombErr error, calls, stopped int64, firstStop error) {
	var wg sync.WaitGroup
	var ncalls, nstopped atomic.Int64
	var first atomic.Pointer[error]
	bombDone := make(chan struct{})
	for i, tenant := range []string{"b", "c", "d"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-bombDone:
					if k > 0 {
						return
					}
				default:
				}
				src := innocentScripts[(i+k+round)%len(innocentScripts)]
				ncalls.Add(1)
				if err := invokeAs(context.Background(), rt, tenant, "work", src, 20*time.Second); err != nil {
					nstopped.Add(1)
					first.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	bombErr = invokeAs(context.Background(), rt, "a", "bomb", bomb, time.Minute)
	close(bombDone)
	wg.Wait()
	if p := first.Load(); p != nil {
		firstStop = *p
	}
	return bombErr, ncalls.Load(), nstopped.Load(), firstStop
}

// requireMemoryStop fails unless err is a memory_bytes LimitError.
func requireMemoryStop(t *testing.T, err error, what string) {
	t.Helper()
	var le *sandbox.LimitError
	require.True(t, errors.As(err, &le) && le.Limit == sandbox.LimitMemory, "%s: want a memory_bytes stop, got %v", what, err)
}

// stackDoubling doubles a string through errors' stacks: the first line of
// a stack is the error's name and message as they are at its first read,
// which goja writes in one step that is not counted before it is made.
const stackDoubling = `let s = "x"; for (;;) { const e = new Error(); e.name = e.message = s; s = e.stack }`

// One call doubling a string beside three innocent calls, at the default
// budget and with no host ceiling, is stopped by its memory guard and the
// process lives: the watchdog never waits for a GC that the doubling
// holds up. (Before, the watchdog forced the GC itself and sat in it
// while the string kept doubling, until the process ran out of memory.)
// The same holds for what an error's stack still allows, a string that
// doubles at every read: the watchdog stops it between the reads.
func TestDoublingStringBesideInnocentCallsIsStopped(t *testing.T) {
	t.Parallel()
	out := runChild(t, "TestChildDoublingString", 5*time.Minute, rssBound+1<<30)
	require.Equal(t, 2, strings.Count(out, "bomb stopped: memory_bytes"), tail(out))
}

func TestChildDoublingString(t *testing.T) {
	if !inChild(t.Name()) {
		t.Skip("the child of TestDoublingStringBesideInnocentCallsIsStopped")
	}
	bombRounds(t, bombScripts[0], "the doubling string", true)
	bombRounds(t, stackDoubling, "the doubling stack", true)
}

// bombRounds runs three rounds of bomb beside innocent calls (mixRound)
// on a runtime of four slots with no host ceiling, the watchdog's ticks
// stopped unless ticks is set, requires each bomb stopped for memory,
// and prints what the parent test looks for.
func bombRounds(t *testing.T, bomb, what string, ticks bool) {
	rt, err := js.New(js.Options{PoolSize: 4, HostMemoryBytes: -1, Limits: sandbox.Limits{WallTime: time.Minute}})
	require.NoError(t, err)
	defer rt.Close()
	if !ticks {
		js.StopWatchdogTicks(rt)
	}
	for round := range 3 {
		bombErr, calls, stopped, _ := mixRound(rt, bomb, round)
		requireMemoryStop(t, bombErr, what)
		fmt.Printf("round %d: innocent calls stopped: %d of %d\n", round, stopped, calls)
	}
	fmt.Println("bomb stopped: memory_bytes")
}

// heldChunks holds a new mebibyte string at every step: no step is
// large, and none is a concatenation (which is checked before it copies),
// so only the memory guards' looks at the heap can stop it, and it grows
// as fast as a doubling string.
const heldChunks = `const chunk = "x".repeat(1 << 20); let held = []; for (let i = 0; ; i++) held.push(chunk + i)`

// The memory guards do not wait for the watchdog's goroutine to be
// scheduled: on a starved machine its timer went unserved for seconds
// while a doubling string grew past 2 GiB beside innocent calls that kept
// running. With that goroutine stopped outright, a call that holds a new
// mebibyte at every step (a copy of one made before) is still stopped for memory, by the looks the
// innocent calls take as they start and end, and the process stays
// within its bound.
// REF 9.M16
func TestMemoryIsStoppedWithoutTheWatchdogsTicks(t *testing.T) {
	// Not parallel: its child would grow beside the children of the other
	// tests that do, and they compete for the machine's memory bandwidth,
	// which starves every child's guards.
	out := runChild(t, "TestChildHeldChunksNoTicks", 5*time.Minute, rssBound+1<<30)
	require.Contains(t, out, "bomb stopped: memory_bytes")
}

func TestChildHeldChunksNoTicks(t *testing.T) {
	if !inChild(t.Name()) {
		t.Skip("the child of TestMemoryIsStoppedWithoutTheWatchdogsTicks")
	}
	bombRounds(t, heldChunks, "the held chunks", false)
}

// A string doubled by every way of writing a concatenation, and by the
// built-ins that join strings a script sets, is stopped for memory before
// the copy that would pass the budget, in one step: no look at the heap
// is needed, so the watchdog's ticks are stopped here, and the call is
// alone. (Unguarded, each grows until its wall time ends, to gigabytes.)
// REF 9.M19
func TestConcatenationIsStoppedBeforeTheCopy(t *testing.T) {
	t.Parallel()
	out := runChild(t, "TestChildConcatenation", 5*time.Minute, rssBound)
	require.Contains(t, out, "all stopped")
}

func TestChildConcatenation(t *testing.T) {
	if !inChild(t.Name()) {
		t.Skip("the child of TestConcatenationIsStoppedBeforeTheCopy")
	}
	rt, err := js.New(js.Options{PoolSize: 1, HostMemoryBytes: -1, Limits: sandbox.Limits{WallTime: time.Minute}})
	require.NoError(t, err)
	defer rt.Close()
	js.StopWatchdogTicks(rt)
	for _, src := range []string{
		`let s = "x"; for (;;) s += s`,
		`let s = "x"; for (;;) s = s + s`,
		"let s = 'x'; for (;;) s = `${s}${s}`",
		`const o = {s: "x"}; for (;;) o.s += o.s`,
		`let s = "x"; const w = {valueOf() { return s }}; for (;;) s = w + s`,
		`let s = "x"; for (let i = 0; ; i++) s = s + i + s`,
		`let s = "x"; for (;;) s = Error.prototype.toString.call({name: s, message: s})`,
		`let s = "x"; for (;;) s = RegExp.prototype.toString.call({source: s, flags: s})`,
		`let s = "x"; for (;;) s = [s, s].toLocaleString()`,
	} {
		err := invokeAs(context.Background(), rt, "a", "bomb", src, time.Minute)
		requireMemoryStop(t, err, src)
	}
	fmt.Println("all stopped")
}

// When the process as a whole nears the host memory ceiling, the
// runtime stops its calls (memory_bytes, naming the ceiling) rather than
// let the process grow past it, even when each call is within its own
// budget; the next call runs.
func TestHostCeilingStopsCalls(t *testing.T) {
	t.Parallel()
	out := runChild(t, "TestChildHostCeiling", 5*time.Minute, rssBound)
	require.Contains(t, out, "all stopped at the ceiling")
}

func TestChildHostCeiling(t *testing.T) {
	if !inChild(t.Name()) {
		t.Skip("the child of TestHostCeilingStopsCalls")
	}
	const ceiling = 512 << 20
	rt, err := js.New(js.Options{PoolSize: 4, HostMemoryBytes: ceiling,
		Limits: sandbox.Limits{MemoryBytes: 2 << 30, WallTime: time.Minute}})
	require.NoError(t, err)
	defer rt.Close()
	require.Equal(t, int64(ceiling), rt.HostMemoryBytes())
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each holds what it builds, 96 KiB at a time: no step is
			// large, and no guarded built-in is used.
			errs[i] = invokeAs(context.Background(), rt, "t", "hog", `let held = [];
				for (;;) { let a = []; for (let i = 0; i < 1024; i++) a.push({i, s: "y" + i}); held.push(a) }`, time.Minute)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		requireMemoryStop(t, err, fmt.Sprintf("hog %d", i))
		require.ErrorContains(t, err, "host memory ceiling")
	}
	runtime.GC() // what the hogs held is garbage
	require.NoError(t, invokeAs(context.Background(), rt, "t", "next", `board.setVar("ok", true)`, time.Minute))
	fmt.Println("all stopped at the ceiling")
}

// Tenant a runs memory bombs (a doubling string, an array, a Map) in a
// loop while tenants b, c and d run real work on the same runtime, at
// 16 MiB budgets, for 100 rounds: the process never dies, every bomb is
// stopped for memory, and the test prints how many innocent calls were
// stopped with them (docs/sandbox.md quotes it).
func TestTenantMixInProcess(t *testing.T) {
	t.Parallel()
	out := runChild(t, "TestChildTenantMix", 15*time.Minute, 2*rssBound)
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "innocent calls stopped:") {
			t.Log(strings.TrimSpace(line))
		}
	}
	require.Contains(t, out, "innocent calls stopped:")
}

func TestChildTenantMix(t *testing.T) {
	if !inChild(t.Name()) {
		t.Skip("the child of TestTenantMixInProcess")
	}
	// A wall time long enough that only memory stops a bomb; 16 MiB
	// budgets, so that 100 rounds fit the test binary's default timeout
	// under the race detector.
	rt, err := js.New(js.Options{PoolSize: 4, Limits: sandbox.Limits{WallTime: time.Minute, MemoryBytes: 16 << 20}})
	require.NoError(t, err)
	defer rt.Close()
	const rounds = 100
	var calls, stopped int64
	for round := range rounds {
		bombErr, c, s, first := mixRound(rt, bombScripts[round%len(bombScripts)], round)
		requireMemoryStop(t, bombErr, fmt.Sprintf("round %d", round))
		calls, stopped = calls+c, stopped+s
		if first != nil && !errors.As(first, new(*sandbox.LimitError)) {
			t.Fatalf("round %d: an innocent call failed other than by a limit: %v", round, first)
		}
	}
	fmt.Printf("innocent calls stopped: %d of %d, in %d rounds\n", stopped, calls, rounds)
}
