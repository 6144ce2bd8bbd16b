// Package fault holds the error kinds that every Corral package shares.
//
// A kind answers "what class of failure is this?" so that callers can react
// without parsing messages: retry a RateLimit, show a Validation error to the
// document author, refuse a PolicyDenied call. Kinds are tested with
// errors.Is through any amount of wrapping:
//
//	if errors.Is(err, fault.Validation) { ... }
//
// # Making errors
//
// New and Wrap build an *Error that carries a kind, the operation that failed
// (lowercase, "deploy", "build resource \"bus\"") and a message that says what
// went wrong and where. Sentinel errors of other packages are made with New
// at package level, so that errors.Is matches both the sentinel itself and its
// kind.
//
// # Rules
//
// Messages are lowercase and carry no trailing punctuation. An error keeps
// its cause with %w or Wrap so that errors.As still reaches typed errors
// deeper in the chain. The kind of an error is the first kind met when the
// chain is walked depth first (KindOf).
package fault
