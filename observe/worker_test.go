package observe_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/observe"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/proc"
)

// REF 13.2.10: a worker process killed under a call is counted as a
// restart of its tenant; closing the process runtime is not.
func TestWorkerRestarts(t *testing.T) {
	app := newApp(t)
	reg := prometheus.NewRegistry()
	obs, err := observe.New(context.Background(), app, observe.Options{Registerer: reg})
	require.NoError(t, err)
	defer obs.Close()

	v, err := js.Factory().New(context.Background(), resource.Input{Name: "js",
		Settings: []byte(`{"isolation": "process", "limits": {"wall_time": "1m"}}`)})
	require.NoError(t, err)
	rt := v.(*proc.Runtime)
	defer rt.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = rt.Invoke(context.Background(), sandbox.Invocation{Node: "spin", Type: "script",
			Script: sandbox.Script{Name: "spin", Source: `for (;;) {}`}, Board: *agent.NewBoard(),
			Run: sandbox.RunInfo{RunID: "r", Tenant: "acme"}})
	}()
	pid := 0
	for pid == 0 {
		for _, w := range rt.Workers() {
			if w.Tenant == "acme" && !w.Idle {
				pid = w.Pid
			}
		}
		select {
		case <-done:
			t.Fatal("the call ended before its worker was seen")
		case <-time.After(5 * time.Millisecond):
		}
	}
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	<-done
	require.NoError(t, rt.Close())
	assert.Equal(t, 1.0, counter(t, reg, observe.MetricWorkerRestarts, map[string]string{"tenant": "acme"}))
}
