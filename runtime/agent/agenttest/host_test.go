package agenttest_test

import (
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A test host yields an event bus, as a session's host does, until
// SetEventBus(false) withholds it; switched on again it is the same bus.
func TestHostEventBus(t *testing.T) {
	t.Parallel()
	h := agenttest.NewHost()
	bus, ok := agent.EventBusFromHost(h)
	require.True(t, ok)
	require.NotNil(t, bus)

	h.SetEventBus(false)
	_, ok = agent.EventBusFromHost(h)
	assert.False(t, ok, "a withheld bus is no capability")
	_, ok = agent.EventBusFromHost(&agent.HostFuncs{Inner: h})
	assert.False(t, ok, "nor through a decorator")

	h.SetEventBus(true)
	again, ok := agent.EventBusFromHost(h)
	require.True(t, ok)
	assert.Same(t, bus, again)
}
