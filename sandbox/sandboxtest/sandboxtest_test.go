package sandboxtest_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flawed wraps the js runtime and breaks one rule on demand.
type flawed struct {
	sandbox.Runtime
	flaw string
	mu   sync.Mutex
	last sandbox.Writes // the last call's writes
}

func (f *flawed) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	switch f.flaw {
	case "ignores limits":
		inv.Limits = sandbox.Limits{}
	case "no abi":
		inv.ABI = nil
	case "leaks writes between calls":
		out, err := f.Runtime.Invoke(ctx, inv)
		f.mu.Lock()
		defer f.mu.Unlock()
		own := out.Writes
		out.Writes = append(slices.Clip(own), f.last...)
		f.last = own
		return out, err
	case "writes the board it is handed":
		out, err := f.Runtime.Invoke(ctx, inv)
		b := inv.Board
		out.Writes.Apply(&b)
		return out, err
	}
	out, err := f.Runtime.Invoke(ctx, inv)
	if f.flaw == "swallows errors" {
		return out, nil
	}
	return out, err
}

func (f *flawed) Eval(ctx context.Context, ev sandbox.Evaluation) (any, error) {
	if f.flaw == "cannot eval" {
		return nil, fault.New(fault.NotAvailable, "eval", "not here")
	}
	return f.Runtime.Eval(ctx, ev)
}

const flawEnv = "SANDBOXTEST_FLAW"

func newFlawed(flaw string) func(t *testing.T) sandbox.Runtime {
	return func(t *testing.T) sandbox.Runtime {
		wall := time.Minute
		if flaw == "ignores limits" {
			wall = 2 * time.Second // the looping case then ends at the runtime's wall time
		}
		rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: wall}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = rt.Close() })
		return &flawed{Runtime: rt, flaw: flaw}
	}
}

// The js runtime, wrapped without a flaw, passes.
func TestSoundRuntimePasses(t *testing.T) {
	sandboxtest.Run(t, newFlawed(""))
}

// A runtime without programs has every case skipped, not failed.
func TestMissingProgramsSkip(t *testing.T) {
	sandboxtest.RunPrograms(t, newFlawed(""), sandboxtest.Programs{})
}

// TestFlawedRuntimeChild runs the suite against a flawed runtime in a
// child process started by TestSuiteCatchesFlaws.
func TestFlawedRuntimeChild(t *testing.T) {
	flaw := os.Getenv(flawEnv)
	if flaw == "" {
		t.Skip("runs only as the child process of TestSuiteCatchesFlaws")
	}
	sandboxtest.Run(t, newFlawed(flaw))
}

// Each flaw makes a case of the rule it breaks fail.
func TestSuiteCatchesFlaws(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for flaw, failing := range map[string]string{
		"ignores limits":                "wall_time",
		"no abi":                        "capability_granted",
		"swallows errors":               "signal_error",
		"leaks writes between calls":    "concurrent_isolation",
		"writes the board it is handed": "board_writes_measured",
		"cannot eval":                   "eval_condition",
	} {
		t.Run(flaw, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestFlawedRuntimeChild$/^"+failing+"$", "-test.v")
			cmd.Env = append(os.Environ(), flawEnv+"="+flaw)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the suite must fail:\n%s", out)
			assert.Contains(t, string(out), "--- FAIL: TestFlawedRuntimeChild/"+failing+" ", "output:\n%s", out)
			assert.Contains(t, string(out), "rule: ")
		})
	}
}

// The Host is deterministic: the same seed gives the same numbers, and the
// clock moves one second per reading from Epoch.
func TestHostIsDeterministic(t *testing.T) {
	a, b := sandboxtest.NewHost(3), sandboxtest.NewHost(3)
	for range 5 {
		assert.Equal(t, a.Random(), b.Random())
	}
	assert.Equal(t, sandboxtest.Epoch(), a.Now())
	assert.Equal(t, sandboxtest.Epoch().Add(time.Second), a.Now())
	assert.Empty(t, a.DrainSteer())
}
