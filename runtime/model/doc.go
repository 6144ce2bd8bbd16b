// Package model holds the contract of model providers: resources of kind
// model.Provider that generate assistant replies from a conversation.
//
// A Provider answers a Request (model, system prompt, messages, tools,
// tool choice) with a Response (the assistant message with its text and
// tool calls, the finish reason and the usage), optionally streaming
// Deltas as they arrive. engine/openai implements it for every
// OpenAI-compatible server; the scripted provider answers from canned
// replies for tests, replay and the offline demo.
//
// A Request may also name a profile (the provider's other key and
// endpoint), an Intent (the modalities the reply should hold; zero means
// text) and provider-specific Extensions. Providers that can tell before
// any call whether they serve a profile or an intent implement the
// optional ProfileChecker and IntentChecker; an inference node asks them
// when it is built.
//
// # Errors
//
// Errors carry a fault kind: RateLimit, Timeout, NotAvailable, Forbidden,
// Validation, Aborted or Internal.
package model
