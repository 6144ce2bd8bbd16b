// Package scripted is a deterministic model provider (kind model.Provider,
// impl "scripted") that answers from canned replies: for tests, for
// replaying a conversation, and for an offline demo agent.
//
// # Replies
//
// Settings list replies. A reply has text (with {{input}} standing for the
// last message's text), tool calls, how many chunks the text streams in,
// a finish reason, a usage and an optional error. A reply with a condition
// — match (a case-insensitive substring of the last message's text),
// regex, on (the last message's role: user or tool) — answers any call
// that meets it; the other replies answer in order, by the conversation's
// turn (the assistant messages already in it); the fallback answers the
// rest. Which reply answers depends on the request only, so the provider
// keeps no state and every run of the same conversation gets the same
// answers.
//
// # Errors
//
// Parse and the factory reject malformed settings with Validation errors
// naming the key. Generate fails with NotAvailable when no reply answers,
// with the kind of a reply's error, and with Aborted or Timeout when ctx
// ends while streaming.
package scripted
