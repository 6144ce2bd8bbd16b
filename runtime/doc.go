// Package runtime owns a built deployment and exposes it to an application:
// its resources, its event router and (with the session layer) its agents'
// sessions. It is transport-neutral: no HTTP, no wire protocol.
//
// # Lifecycle
//
// NewBuilder(reg) takes a resource registry that holds every factory the
// document references. The With* methods configure the builder (host
// factory decorators, a loader, caller-owned external values); Build then
// runs once, in this order: validate the document, decode the runtime:
// section (DecodeConfig, by the document's own strict decoder,
// deploy.DecodeSection), check external dependencies, build and wire the
// resources and agents (package deploy), resolve the event bus and the
// checkpoint store, build the host factory (base, then WithHostFactory, then
// WithResultHostFactory), and check the dynamic catalog. Any failure closes
// whatever was built. The result is a Runtime serving generation 1.
//
// Close releases everything the runtime owns: the sessions, the router's
// attachments, then the generation's resources in reverse build order, its
// deployed agents and its registered agents. External values are borrowed
// and never closed. Close is idempotent.
//
// # Agents registered at run time
//
// RegisterAgent binds an agent.Definition the way deployment binds a
// document agent and serves it to sessions; UnregisterAgent waits for its
// turns to end, closes its sessions and its instance, and restores the
// registration when that wait runs out. Agent and AgentNames are the live
// view. Changes are announced under runtime.agent.<id>.registered and
// .removed.
//
// # Reload
//
// Reload builds a new generation from a document, swaps it in, and retires
// the old one when its last in-flight turn has ended: turns finish on the
// generation they started on. Registered agents are bound again, deployed
// agents the document drops are drained first, and any failure leaves the
// serving generation as it was. An unchanged document is not rebuilt.
// Attempts are announced under runtime.rebuild.started, .completed and
// .failed.
//
// # Events
//
// Attach subscribes a sink to the runtime's router. The router spans every
// live generation's bus, so an attachment survives reloads. Attachments drop
// the newest envelope when their buffer is full unless
// event.WithAttachBackpressure says otherwise.
//
// # Errors
//
// Every error carries a fault kind. Document problems are *deploy.Error
// values that name the file, line and document path, for example
// "deploy.yaml:7: runtime.sessions.sink_buffer: ...". Methods called after
// Close return ErrClosed (NotAvailable); Reload and RegisterAgent called
// after Drain return ErrDraining (NotAvailable).
//
// # Concurrency
//
// A Runtime is safe for concurrent use. Values lent by Resource belong to
// the runtime: do not close them or keep them past Close.
package runtime
