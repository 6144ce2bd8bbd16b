// Package message defines the messages that flow between users, agents,
// models and tools: a role and an ordered list of content parts.
//
// # Parts
//
// A part is text, data (any JSON value with an optional media type), a
// tool call (id, name, JSON arguments) or a tool result (the id of the call
// it answers, its content, whether it is an error). Exactly the field that
// matches the part's type is set.
//
// # Rules
//
// Validate checks a message before it is used: a known role, at least one
// part, and parts that are well formed for their type and role. Messages are
// values, but their parts and metadata are shared slices and maps: Clone
// copies deeply, and every Corral API that keeps a message keeps a clone.
//
// Decode reads the JSON wire form strictly (unknown fields are an error) and
// validates it; json.Marshal writes it.
package message
