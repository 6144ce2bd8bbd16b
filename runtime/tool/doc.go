// Package tool holds the contract of tool assemblies: resources of kind
// tool.Assembly that give an agent a set of tools a model may call.
//
// An Assembly lists its tools as Definitions (name, description, JSON
// schema of the arguments) and executes batches of calls. The graph
// engine's tool node runs the batch of the last assistant message through
// the agent's assembly; runtime.dynamic_catalog.tools maps agents to
// assemblies.
//
// # Finding an agent's assembly
//
// An engine may bind an assembly as a dependency. Otherwise the turn's
// host may carry a Catalog (CatalogFromHost): the agent's own mapping, or
// else the DefaultAgent one. NewCatalog and WithCatalog build such a host
// from a map.
//
// # Errors
//
// A failing tool is a result with IsError set; Execute fails only for the
// batch as a whole, with an error that carries a fault kind.
package tool
