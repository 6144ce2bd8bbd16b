// Package agent holds the contracts between the runtime and the engines that
// run agents: what an agent is (Definition, AgentCard, EngineRef), what a run
// receives (Request, Run, Board, Host) and what it returns (Result), and the
// checkpoint contract that makes runs resumable.
//
// # Host and capabilities
//
// An engine reaches the world only through the Host it is given: publish
// events, watch interrupts, ask the user, save checkpoints, report usage.
// Everything else is an optional capability, an interface that some hosts
// implement. Engines find capabilities with CapabilityFromHost, which checks
// the host and then follows UnwrapHost through decorators (at most 64
// levels); they never type-assert the concrete host, because the runtime
// always wraps it. A decorator that replaces an authorising surface returns
// nil from UnwrapHost to stop the search.
//
// # Concurrency
//
// Hosts, checkpoint stores and engines must be safe for concurrent use.
// Boards and checkpoints are plain values: Clone before sharing.
package agent
