package wasm_test

import (
	"testing"
	"time"

	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/corral-rt/corral/sandbox/wasm"
	"github.com/stretchr/testify/require"
)

func newRuntime(t *testing.T) sandbox.Runtime {
	t.Helper()
	rt, err := wasm.New(wasm.Options{Limits: sandbox.Limits{WallTime: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// The wasm runtime passes the sandbox conformance suite unchanged, with
// the Go port of its programs (testdata/wasm/suite); its Eval is not
// available, which the eval cases check as the contract says.
// REF 5.4
// REF 9.3
// REF 9.4
// REF 9.M5 (host.publish confined to the run's own namespace)
// REF 9.8
// REF 9.9
func TestConformance(t *testing.T) {
	progs := sandboxtest.WasmPrograms(guests.Build(t, suiteGuest))
	sandboxtest.RunPrograms(t, newRuntime, progs)
}
