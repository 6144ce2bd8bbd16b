// Package local holds the in-process implementations of the delegation
// contracts (package runtime/delegation): the resources a deployment
// declares to let its agents delegate to each other.
//
// # Resources
//
// delegation.Directory/local (Directory) lists the agents of its
// deployment (bound at wire time). delegation.Service/local (Service)
// runs them: deps directory (required) and session_provider (default
// delegation.SessionProvider/random, RandomProvider); settings
// max_concurrency (4), max_depth (8), timeout (0: the caller's ctx),
// idempotency_retention (10m) and defer_workers (max_concurrency: the cap
// on async delegations). tool.Assembly/delegation (Tools) gives models the
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
// host (agent.HostFromContext) with its steer source withheld
// (WithoutSteer), an async call under a worker host that offers nothing.
//
// # Depth
//
// Service runs its target one deeper than the depth its ctx carries
// (delegation.ContextWithDepth); past max_depth Delegate is PolicyDenied.
//
// # Concurrency and lifecycle
//
// Directory and Service are safe for concurrent use. A service runs at
// most max_concurrency delegations at once (defer_workers of them async)
// and refuses one more with RateLimit rather than queueing it, so nested
// delegations never wait on each other. Async delegations run on
// goroutines the service owns; Close cancels them, waits for them and is
// idempotent.
//
// # Errors
//
// Delegate refuses with an error: Validation (a bad request, a depth of 0
// or less), PolicyDenied (past max_depth), NotFound (an unknown target),
// Conflict (an idempotency key reused for another request), NotAvailable
// (a closed service), RateLimit (full). A run that started and went wrong
// is not an error: it is a failed or canceled delegation.Response whose
// ErrorInfo keeps the error's kind.
package local
