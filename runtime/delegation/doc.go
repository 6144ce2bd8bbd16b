// Package delegation holds the contracts through which one agent's run
// hands work to another agent: the Directory that finds targets, the
// Service that runs them, the Request and Response they exchange, and the
// host capability through which a run reaches the service
// (ServiceFromHost, WithService). It knows no sessions and no engine: the
// in-process implementations a deployment declares as resources are in
// package runtime/delegation/local, and package runtime/delegation/hostwrap
// puts a deployment's service on every turn host.
//
// # Contracts
//
// A Request names a target agent, an input message, inputs, metadata, a
// mode (sync or async) and an optional idempotency key. A Response has an
// id and a status — accepted, running, succeeded, failed or canceled — and
// obeys Response.Validate: a non-terminal response has no output or error,
// succeeded has no error, failed has one, canceled has no output. An
// ErrorInfo carries an error's kind across process and sandbox boundaries.
//
// # Depth
//
// Delegations nest: a run nobody delegated is at depth 0, and a Service
// runs its target one deeper than the depth its ctx carries
// (ContextWithDepth). A run's own ctx does not carry its depth; its host
// does, as AtDepth binds the service it offers (hostwrap.Wrap reads the
// depth from the ctx of the host factory, which is the ctx the service
// started the turn with).
//
// # Calling context
//
// WithCaller names the agent that delegates (idempotency keys are the
// caller's own); WithInterruptsWatched says that the caller ends the ctx
// when its run is interrupted.
//
// # Errors
//
// Delegate refuses a request it cannot run with an error (Validation,
// PolicyDenied, NotFound, Conflict, NotAvailable, RateLimit; see Service).
// A run that started and went wrong is not an error: it is a failed or
// canceled Response whose ErrorInfo keeps the error's kind.
package delegation
