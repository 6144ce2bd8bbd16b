// Package message defines the messages that flow between users, agents,
// models and tools: a role, an ordered list of content parts, an optional
// name and string metadata.
//
// # Roles
//
// A message is from the system, the user, the assistant (a model or an
// agent) or a tool. The role decides which parts it may carry: tool calls
// are made by assistant messages only, and tool results are answered by tool
// messages only.
//
// # Parts
//
// A part is text, data (any JSON value with an optional media type), a
// tool call (id, name, JSON arguments) or a tool result (the id of the call
// it answers, its content, whether it is an error). Exactly the field that
// matches the part's type is set; MimeType belongs to data parts. The
// constructors TextPart, DataPart, ToolCallPart and ToolResultPart build
// well-formed parts, and NewTextMessage a message with one text part.
//
// # Lifecycle
//
// Build a message with the constructors or a literal, check it with
// Validate before it is used, and send it as JSON: json.Marshal writes the
// wire form and Decode reads it back. A message that passes Validate
// survives the round trip unchanged, except that data parts come back as
// json.Marshal writes them (compact, with <, > and & escaped: the same JSON
// value, not the same bytes) and empty metadata comes back nil.
//
// # Concurrency
//
// Messages are values, but their parts, data and metadata are shared slices
// and maps: a copy of a Message aliases the original. Treat a message you
// did not build as read-only, and use Clone (or CloneAll) before changing
// or keeping one; every Corral API that keeps a message keeps a clone.
// Reading one message from many goroutines is safe.
//
// # Errors
//
// Validate and Decode return errors of kind fault.Validation whose message
// names the place: "message: role \"bot\" is not one of ...",
// "message: parts[2].tool_call.id: required",
// "message: parts[0].mime_type: not allowed in a text part". Decode is
// strict: unknown fields, empty input and trailing data are errors, and the
// decoded message must be valid.
package message
