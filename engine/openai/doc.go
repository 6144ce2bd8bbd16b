// Package openai is the OpenAI-wire model driver: one model.Provider (kind
// model.Provider, impl "openai") for every server that speaks Chat
// Completions — OpenAI, Azure OpenAI, vLLM, Ollama, the llama.cpp server,
// LiteLLM and other gateways. It uses the go-openai SDK for the wire.
//
// # Settings
//
// Settings are decoded strictly after ${env:NAME} is expanded in every
// string, so the key is written api_key: ${env:OPENAI_API_KEY}. base_url
// (default https://api.openai.com/v1), auth.scheme (bearer, header with
// auth.header, or none for local servers), model (the default model),
// organization, project, headers, azure.api_version, timeout (per attempt,
// stream included), retries, retry_backoff, max_retry_wait,
// include_usage, id (the provider id extensions name, default "openai") and
// profiles: further keys and endpoints a request picks with
// model.Request.Profile (CheckProfile tells before any call whether one is
// served). See docs/models.md.
//
// # Generation
//
// Generate sends one Chat Completions request: the system prompt first,
// then the conversation (a tool message becomes one wire message per
// result), the tools as functions and the tool choice. With an onDelta
// callback the reply is streamed over SSE: text deltas are passed on as
// they arrive, and tool-call pieces are assembled by index and passed on
// whole. The finish reason and the usage (the last chunk, requested with
// stream_options.include_usage) complete the Response. The fields of the
// request's extensions for this provider's id are merged into the JSON body
// by the driver's HTTP transport (the SDK has no extra-body option); one
// that would override a key the driver sets is a Validation error. The
// driver produces text: an intent asking for another modality is refused
// (CheckIntent).
//
// # Errors
//
// HTTP statuses map to kinds (KindOfStatus): 400/422 Validation, 401/403
// Forbidden, 404 NotFound, 408/504 Timeout, 409 Conflict, 429 RateLimit,
// other statuses NotAvailable; a *StatusError in the chain carries the
// status, the server's message, Retry-After and the attempt count. 408, 429
// and 5xx answers and unreachable servers are retried (settings.retries)
// before any delta was passed on; Retry-After is honoured up to
// max_retry_wait. A malformed or cut stream is Internal and quotes the
// offending line; ctx cancellation is Aborted and a deadline Timeout.
//
// # Concurrency
//
// A Provider is safe for concurrent use. Close releases idle connections;
// it is idempotent.
package openai
