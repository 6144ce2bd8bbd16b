package tool

import (
	"maps"

	"github.com/corral-rt/corral/runtime/agent"
)

// DefaultAgent is the catalog key that covers every agent without a
// mapping of its own (runtime.dynamic_catalog.tools.default).
const DefaultAgent = "default"

// Catalog is a host capability (found with agent.CapabilityFromHost, or
// CatalogFromHost) that maps agents to their tool assemblies: the
// runtime's dynamic_catalog.tools. The graph engine's tool node asks it
// when its engine binds no tools dependency.
type Catalog interface {
	// ToolAssembly returns the assembly mapped to agentID, or else the one
	// mapped to DefaultAgent.
	ToolAssembly(agentID string) (Assembly, bool)
}

// CatalogFromHost returns the host's tool catalog, if it carries one.
func CatalogFromHost(h agent.Host) (Catalog, bool) { return agent.CapabilityFromHost[Catalog](h) }

// MapCatalog is a Catalog over a map from agent ids (and DefaultAgent) to
// assemblies. It is immutable: NewCatalog copies the map.
type MapCatalog struct {
	m map[string]Assembly
}

var _ Catalog = (*MapCatalog)(nil)

// NewCatalog returns a catalog over a copy of m. Nil assemblies are left
// out.
func NewCatalog(m map[string]Assembly) *MapCatalog {
	c := &MapCatalog{m: make(map[string]Assembly, len(m))}
	for k, a := range maps.All(m) {
		if !agent.IsNil(a) {
			c.m[k] = a
		}
	}
	return c
}

// ToolAssembly returns the assembly of agentID, falling back to
// DefaultAgent.
func (c *MapCatalog) ToolAssembly(agentID string) (Assembly, bool) {
	if a, ok := c.m[agentID]; ok {
		return a, true
	}
	a, ok := c.m[DefaultAgent]
	return a, ok
}

// WithCatalog returns h decorated with c: the result answers
// CatalogFromHost with c and every other capability as h does (it
// implements agent.HostUnwrapper). h and c must not be nil.
func WithCatalog(h agent.Host, c Catalog) agent.Host { return catalogHost{Host: h, Catalog: c} }

type catalogHost struct {
	agent.Host
	Catalog
}

var _ agent.HostUnwrapper = catalogHost{}

// UnwrapHost returns the decorated host.
func (h catalogHost) UnwrapHost() agent.Host { return h.Host }
