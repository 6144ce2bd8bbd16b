package tool_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// named is an assembly that only has a name.
type named string

func (n named) Definitions() []tool.Definition { return []tool.Definition{{Name: string(n)}} }
func (n named) Execute(context.Context, tool.Batch) ([]message.ToolResult, error) {
	return nil, nil
}

// An agent's own mapping wins; every other agent falls back to default.
func TestCatalogDefault(t *testing.T) {
	t.Parallel()
	// REF 1.2.9 (the reserved key default is an optional fallback)
	shared := named("shared")
	c := tool.NewCatalog(map[string]tool.Assembly{"qa": named("qa"), tool.DefaultAgent: shared, "nil": nil})
	a, ok := c.ToolAssembly("qa")
	require.True(t, ok)
	assert.Equal(t, named("qa"), a)
	a, ok = c.ToolAssembly("other")
	require.True(t, ok)
	assert.Equal(t, shared, a)
	a, ok = c.ToolAssembly("nil")
	require.True(t, ok)
	assert.Equal(t, shared, a, "a nil assembly is left out")

	_, ok = tool.NewCatalog(map[string]tool.Assembly{"qa": named("qa")}).ToolAssembly("other")
	assert.False(t, ok, "no default, no mapping")
}

// One assembly may back several agents.
func TestCatalogShared(t *testing.T) {
	t.Parallel()
	// REF 1.2.11 (one resource may back several agents)
	shared := named("shared")
	m := map[string]tool.Assembly{"a": shared, "b": shared}
	c := tool.NewCatalog(m)
	delete(m, "a")
	for _, id := range []string{"a", "b"} {
		a, ok := c.ToolAssembly(id)
		require.True(t, ok, "the catalog keeps its own copy of the map")
		assert.Equal(t, shared, a)
	}
}

// WithCatalog adds the catalog to a host and keeps every other capability
// reachable.
func TestWithCatalog(t *testing.T) {
	t.Parallel()
	base := agenttest.NewHost()
	_, ok := tool.CatalogFromHost(base)
	assert.False(t, ok)
	h := tool.WithCatalog(base, tool.NewCatalog(map[string]tool.Assembly{tool.DefaultAgent: named("x")}))
	c, ok := tool.CatalogFromHost(h)
	require.True(t, ok)
	a, _ := c.ToolAssembly("any")
	assert.Equal(t, named("x"), a)
	steer, ok := agent.SteerFromHost(h)
	require.True(t, ok, "capabilities of the decorated host stay reachable")
	assert.Equal(t, base, steer)
}
