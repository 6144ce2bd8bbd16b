package proc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/proc"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/require"
)

// workerMemory is the kernel cap of the tests' workers: a race build's
// worker needs room for the race detector's shadow memory.
func workerMemory() int64 {
	if raceEnabled {
		return 768 << 20
	}
	return 512 << 20
}

// newProcessJS builds a js runtime in isolation: process through the
// factory, as a document does, with extra settings (JSON members).
func newProcessJS(t testing.TB, extra string) *proc.Runtime {
	t.Helper()
	return newProcessJSWith(t, workerMemory(), extra)
}

// newProcessJSWith is newProcessJS with workers capped at memory bytes.
func newProcessJSWith(t testing.TB, memory int64, extra string) *proc.Runtime {
	t.Helper()
	settings := fmt.Sprintf(`{"isolation": "process", "limits": {"wall_time": "1m"}, "process": {"memory_per_worker": %d}%s}`,
		memory, extra)
	v, err := js.Factory().New(context.Background(), resource.Input{Name: "js", Settings: []byte(settings)})
	require.NoError(t, err)
	rt := v.(*proc.Runtime)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	return rt
}

// The js runtime in isolation: process passes the same conformance suite
// as in process: every call crosses to a worker and back, host calls come
// back to the parent's dispatcher.
func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) sandbox.Runtime { return newProcessJS(t, "") })
}
