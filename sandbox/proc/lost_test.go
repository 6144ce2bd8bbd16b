package proc_test

import (
	"context"
	"sync"
	"syscall"
	"testing"

	"github.com/corral-rt/corral/sandbox/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// OnWorkerLost reports a worker killed under a call, with its tenant,
// once; a worker stopped by Close is not lost; remove is idempotent.
func TestOnWorkerLost(t *testing.T) {
	var mu sync.Mutex
	var lost []string
	remove := proc.OnWorkerLost(func(tenant string) {
		mu.Lock()
		defer mu.Unlock()
		lost = append(lost, tenant)
	})
	defer remove()
	rt := newProcessJS(t, "")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, _ = invoke(context.Background(), rt, "acme", "spin", `for (;;) {}`)
	}()
	pid := busyWorker(t, rt, "acme", done)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	<-done
	requireHealthy(t, rt, "acme", pid)
	require.NoError(t, rt.Close())
	mu.Lock()
	assert.Equal(t, []string{"acme"}, lost)
	mu.Unlock()

	remove()
	remove() // idempotent
	proc.OnWorkerLost(nil)()
}
