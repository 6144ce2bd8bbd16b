package runtime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// workerPool stands in for a script runtime whose workers' memory the
// tenants' memory_per_worker quotas cap.
type workerPool struct {
	mu    sync.Mutex
	quota func(string) int64
}

var _ session.WorkerMemoryBinder = (*workerPool)(nil)

func (p *workerPool) BindWorkerMemory(q func(string) int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quota = q
}

func (p *workerPool) capOf(tenant string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quota == nil {
		return -1
	}
	return p.quota(tenant)
}

// A resource that caps its workers per tenant is handed each tenant's
// memory_per_worker quota as its generation declares it, and the resource
// of a reloaded generation the new quotas.
func TestWorkerMemoryQuotaReachesResources(t *testing.T) {
	doc := func(mem string) string {
		return "version: v1\nresources:\n  events: {kind: event.Bus, impl: memory}\n  workers: {kind: test.Workers}\n" +
			"runtime:\n  event_bus: events\n  tenants:\n    acme: {memory_per_worker: " + mem + "}\n    beta: {sessions: 2}\n"
	}
	var (
		mu    sync.Mutex
		pools []*workerPool
	)
	reg := testRegistry(t, &closeLog{})
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "test.Workers"}, func(context.Context, resource.Input) (any, error) {
		p := &workerPool{}
		mu.Lock()
		pools = append(pools, p)
		mu.Unlock()
		return p, nil
	}))
	rt, err := runtime.NewBuilder(reg).Build(context.Background(), parse(t, doc("300000000")))
	require.NoError(t, err)
	defer rt.Close()
	require.Len(t, pools, 1)
	assert.Equal(t, int64(300000000), pools[0].capOf("acme"))
	assert.Equal(t, int64(0), pools[0].capOf("beta"), "a tenant without the quota: the resource's own setting")
	assert.Equal(t, int64(0), pools[0].capOf("nobody"))

	_, err = rt.Reload(context.Background(), parse(t, doc("400000000")))
	require.NoError(t, err)
	require.Len(t, pools, 2)
	assert.Equal(t, int64(400000000), pools[1].capOf("acme"))
}
