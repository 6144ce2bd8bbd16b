// Package agent holds the contracts between the runtime and the engines that
// run agents: what an agent is (Definition, AgentCard, EngineRef), what a run
// receives (Request, Run, Board, Host) and what it returns (Result), and the
// checkpoint contract that makes runs resumable.
//
// # Definitions
//
// A Definition is the agent entry of a deployment document: its card, the
// engine factory (kind, impl, deps, settings), the policy, the capabilities
// its scripts are granted and the hooks of each slot (prepare, observe,
// referee, commit). Definition.Validate checks its shape without resolving a
// factory: card.name and skill ids are required, engine.kind is required
// once any engine field is set, deps are references ("resource" or
// "resource/item"), settings are JSON, policy.max_revise is not negative,
// capabilities are known names or "delegate:<agent id>", and every hook has
// a type.
//
// # Lifecycle
//
// Deploy builds an Agent from a Definition: the engine and the hooks, with
// every built value that implements io.Closer listed in Agent.Closers.
// Agent.Close closes them in reverse build order. Each turn hands the
// engine a Run (its identity), a Host and a Board seeded from the Request;
// the engine returns the final Board, and the runtime turns it into a
// Result. A run that stops at an interrupt returns an *InterruptedError; a
// run saved at a checkpoint can resume from it (Run.ResumeFrom).
//
// # Execute
//
// Execute runs one turn of an Agent: it mints the run id (NewRunID unless
// the request or a resume checkpoint names one), seeds the board (the
// agent's Preparers, or DefaultPreparer; a resume starts from the
// checkpoint's board), calls the Observers, runs the engine, classifies the
// outcome into a Status, lets the Referees judge it (a Revise verdict
// re-runs the engine on a freshly seeded board, at most policy.max_revise
// times), passes a committed result through the commit view and the
// Committers, records State["finalize_reason"] and calls the OnRunEnd
// callback. Business outcomes come back as (result, nil); only
// infrastructure failures return an error. Engines that cannot publish
// their run-end event join a RunEndPublishError to their error.
//
// # Host and capabilities
//
// An engine reaches the world only through the Host it is given: publish
// events, watch interrupts, ask the user, save checkpoints, report usage.
// Everything else is an optional capability, an interface that some hosts
// implement (SteerSource, EventBusProvider, and those of other packages).
// Engines find capabilities with CapabilityFromHost, which checks the host
// and then follows HostUnwrapper.UnwrapHost through decorators, down to
// depth MaxUnwrapDepth (64); they never type-assert the concrete host,
// because the runtime always wraps it. A decorator that replaces an
// authorising surface returns nil from UnwrapHost to stop the search.
// Typed nils count as absent everywhere: a nil *T in a Host or capability
// interface is treated as no host or no capability.
//
// HostFuncs is the usual decorator: it replaces the methods whose function
// is set, passes every other call to its inner host, and unwraps to it.
// NoopHost is a host that does nothing and offers no capability.
//
// # Concurrency
//
// Hosts, checkpoint stores and engines must be safe for concurrent use.
// Definitions, requests, boards and checkpoints are plain values that share
// their slices and maps when copied: Clone before sharing or keeping one.
// A Board is used by one goroutine at a time.
//
// # Errors
//
// Validation problems (Definition.Validate, ValidateRef,
// ValidateCapabilityName, Checkpoint.Validate) are fault.Validation errors
// that name the field. An interrupted run is an *InterruptedError, which
// errors.Is matches against fault.Interrupted. NoopHost.AskUser is
// fault.NotAvailable. A BudgetExceeded error from ReportUsage tells the
// engine to stop spending.
package agent
