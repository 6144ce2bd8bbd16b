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
// # Errors
//
// Errors carry a fault kind: RateLimit, Timeout, NotAvailable, Forbidden,
// Validation, Aborted or Internal.
package model
