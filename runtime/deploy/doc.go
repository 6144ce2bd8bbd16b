// Package deploy reads deployment documents and assembles them into running
// values.
//
// A deployment document declares resources (name → kind, impl, deps,
// settings), agents (id → card, engine, hooks, capabilities) and an opaque
// runtime section:
//
//	version: v1
//	resources:
//	  bus: {kind: event.Bus, impl: memory}
//	agents:
//	  assistant:
//	    card: {name: Assistant}
//	    engine: {kind: agent.Engine, impl: graph, deps: {bus: bus}, settings: {file: graph.yaml}}
//	runtime:
//	  event_bus: bus
//
// # Parsing
//
// Parse and ParseFile decode strictly: JSON when the first non-space byte
// is '{', YAML (exactly one document) otherwise. Unknown fields, repeated
// keys, aliases and values of the wrong type are errors. Each part's
// position is kept, so Document.Pos("agents.qa.engine.settings") says where
// it is written. Validate checks the document's shape without looking up a
// factory. LoadLayers merges a base document with partial overlays and
// reports which layer set each value. DecodeSection decodes a part that
// the document keeps as JSON (the runtime section, once expanded) by the
// same rules, with its errors placed in the document.
//
// # Lifecycle
//
// Build orders the resources by their deps (a cycle is an error naming
// it), then builds each through its registered factory; a failure closes
// what was built, in reverse order. Result.Wire calls Wire on Wireable
// values, binds every agent (BindAgent) and calls BindDeployment on
// DeploymentBinder values. Deploy does both. Result.Close closes resource
// values in reverse build order, except detached ones, then the agents.
// External dependencies (Options.External) are lent to factories and never
// built, wired or closed.
//
// # Errors
//
// Document errors are *Error values that name the file, line and path
// ("deploy.yaml:12: agents.qa.referees[1]: type is required") and carry a
// fault kind: Validation for malformed documents and build failures,
// Conflict for a name declared twice, NotFound for a missing settings
// file, Forbidden for a settings path that leaves the base directory.
// Errors returned by factories keep their kind and are prefixed by the
// operation (build resource "bus": …).
//
// # Concurrency
//
// A Document is read-only once parsed. A Result may be read (Value, Agent,
// Names) from several goroutines; Build, Wire and Close are called by its
// owner. Close is idempotent.
package deploy
