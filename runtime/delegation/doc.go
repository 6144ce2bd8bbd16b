// Package delegation lets one agent's run hand work to another agent: the
// Directory that finds targets, the Service that runs them, the host
// capability through which a run reaches the service
// (ServiceFromHost, WithService), and the local implementations a
// deployment declares as resources.
//
// # Contracts
//
// A Request names a target agent, an input message, inputs, metadata, a
// mode (sync or async) and an optional idempotency key. A Response has an
// id and a status — accepted, running, succeeded, failed or canceled — and
// obeys Response.Validate: a non-terminal response has no output or error,
// succeeded has no error, failed has one, canceled has no output.
//
// # Resources
//
// delegation.Directory/local lists the agents of its deployment (bound at
// wire time). delegation.Service/local runs them: deps directory (required)
// and session_provider (default delegation.SessionProvider/random);
// settings max_concurrency (4), max_depth (8), timeout (0: the caller's
// ctx), idempotency_retention (10m) and defer_workers (max_concurrency:
// the cap on async delegations). tool.Assembly/delegation gives models the
// tools delegate, delegation_status and delegation_targets. Factories
// returns every factory.
//
// # Two ways to run a target
//
// When the runtime has bound its session manager (session.ManagerBinder),
// a delegation is a real session turn of the target: session
// {target, the provider's context id or a fresh ctx-<hex>}, AskUser refused
// with NotAvailable, ephemeral unless the provider is persistent (then a
// retry of the same request resumes a parked run), and the caller's stream
// sinks inherited downgraded to observers. Without a manager (legacy
// mode) the target runs with agent.Execute: a sync call under the caller's
// host (agent.HostFromContext) with its steer source withheld, an async
// call under a worker host that offers nothing.
//
// # Depth
//
// Delegations nest: a run nobody delegated is at depth 0, and Delegate
// runs its target one deeper than the depth its ctx carries
// (ContextWithDepth). A run's own ctx does not carry its depth; its host
// does, as AtDepth binds the service it offers (hostwrap.Wrap reads the
// depth from the ctx of the host factory, which is the ctx the service
// started the turn with). Past max_depth Delegate is PolicyDenied.
//
// # Concurrency and lifecycle
//
// LocalDirectory and LocalService are safe for concurrent use. A service
// runs at most max_concurrency delegations at once (defer_workers of them
// async) and refuses one more with RateLimit rather than queueing it, so nested delegations never wait
// on each other. Async delegations run on goroutines the service owns;
// Close cancels them, waits for them and is idempotent.
//
// # Errors
//
// Delegate refuses with an error: Validation (a bad request, a depth of 0
// or less), PolicyDenied (past max_depth), NotFound (an unknown target),
// Conflict (an idempotency key reused for another request), NotAvailable
// (a closed service), RateLimit (full). A run that started and went wrong
// is not an error: it is a failed or canceled Response whose ErrorInfo
// keeps the error's kind.
package delegation
