// Package serve hosts a built Runtime for many tenants over HTTP: an
// OpenAI-compatible API (GET /v1/models, POST /v1/chat/completions,
// streamed or not) and a native session API under /api (sessions, turns,
// a per-turn server-sent event stream that resumes from Last-Event-ID,
// steer, interrupt, answers to a turn's questions), described by the
// OpenAPI document at /openapi.json, and the web console of package
// serve/console at / (its files need no key; its API calls carry one).
// docs/serve.md is the user's guide; `corral serve` is the command that
// runs it.
//
// # Tenants and keys
//
// Keys maps API keys to tenants; it holds only each key's SHA-256 and
// compares in constant time. Every route but /healthz, /readyz,
// /openapi.json and the console's files needs "Authorization: Bearer
// <key>" (401 otherwise). A tenant sees only its own agents (an agent's
// Definition.Tenant), and the sessions and turns it opened: another
// tenant's are 404, so their existence does not leak. The runtime's
// tenant quotas apply; a refusal is 429 naming the quota, with
// Retry-After for a rate. A tenant holds at most
// Options.MaxSessionsPerTenant sessions open, a share of the runtime's
// max_sessions by default, so that no tenant takes every place.
//
// # Lifecycle
//
// New serves a Runtime it does not own. Drain stops taking sessions and
// turns and waits, bounded, for the running ones, then interrupts them;
// Close releases what the Server holds. Close the Runtime after the
// Server. Each turn started through the Server is watched until it
// settles, by a goroutine of its own or, for a non-streamed completion,
// by its request's handler; Close waits for them.
//
// # Concurrency
//
// A Server is safe for concurrent use. A turn's events are kept in an
// append-only log that streams (Options.MaxStreamsPerTurn at once) read
// from any point, so a stream that drops loses nothing and a resumed one
// repeats nothing. The log never waits for a stream: a client that stops
// reading loses its stream after Options.StreamWriteTimeout. A tenant's
// kept logs share Options.MaxTenantEventBytes; past it the oldest
// finished turns' logs are freed. A tenant holds at most
// Options.MaxHeldPerTenant waits and streams open at once.
//
// # Errors
//
// The native API answers {"error": {"kind", "message", "quota"?}} with the
// fault kind's name; /v1 answers OpenAI's {"error": {"message", "type",
// "param", "code"}}. Validation is 400, an unknown key 401, NotFound 404,
// a quota 429, a draining server 503.
//
// # Extending
//
// Options.Metrics mounts a metrics handler, Options.Middleware wraps
// every route (observe.Observer.HTTPMiddleware), Options.OnQuotaRejected
// hears each quota refusal made before a turn runs, and
// Options.Recordings (a replay.Recorder) serves each turn's recording, so
// that metrics, tracing and recording plug in without serve knowing them.
package serve
