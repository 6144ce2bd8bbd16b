// Package event carries the runtime's events: subjects and patterns,
// envelopes, the Bus contract with its in-memory implementation, the Router
// that attaches sinks across buses, and the standard subjects that engines,
// sessions and the runtime publish.
//
// # Subjects and patterns
//
// A subject is a list of non-empty segments joined by '.', at most 1024
// bytes, without '*' or '>' (ValidateSubject). A pattern may use '*' for
// exactly one segment and, as its last segment, '>' for one or more
// segments (ValidatePattern, Match, CompilePattern). So agent.run.r1.>
// matches agent.run.r1.start, and agent.run.> does not match agent.run.
// Ids placed in subjects go through SanitiseID, which turns '.', '*' and
// '>' into '_'.
//
// # Buses
//
// A Bus delivers each published Envelope to every subscription whose
// pattern matches its subject. Each subscription has a buffered channel and
// a Backpressure policy for when it is full: DropNewest (the default),
// DropOldest, Block (the publisher waits) or Sample. Observers see
// publishes, deliveries and drops. MemoryBus is the in-process bus; it
// caches the subscriptions of each subject. NewFactory builds it as the
// event.Bus/memory resource. Package eventtest holds the conformance suite
// every Bus implementation runs.
//
// # Router
//
// A Router attaches a Sink to a pattern on several buses at once, including
// buses added later, so an attachment outlives a reload that swaps the
// runtime's bus. Each attachment has one goroutine that calls its sink in
// order.
//
// # Lifecycle
//
// NewMemoryBus and NewRouter return open values; Close ends every
// subscription or attachment and is idempotent. A subscription also ends
// when its ctx does, and an attachment when its ctx does, when its detach
// function is called, or when its sink returns an error. Router.Close waits
// for the attachment goroutines; it does not close the buses.
//
// # Concurrency
//
// Buses, subscriptions and routers are safe for concurrent use. A publisher
// never holds a bus lock while it waits on a Block subscription, and
// observer callbacks run outside every lock (they must not call back into
// the bus). Delivered envelopes share their Headers and Payload: treat them
// as read-only.
//
// # Errors
//
// Invalid subjects and patterns wrap ErrInvalidSubject and
// ErrInvalidPattern (kind fault.Validation); a closed bus returns exactly
// ErrBusClosed and a closed router ErrRouterClosed (kind
// fault.NotAvailable); a Block publish cut short by its ctx returns an
// Aborted or Timeout error that still matches the context error.
package event
