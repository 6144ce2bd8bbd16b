// Package fault holds the error kinds that every Corral package shares.
//
// A kind answers "what class of failure is this?" so that callers can react
// without parsing messages: retry a RateLimit, show a Validation error to the
// document author, refuse a PolicyDenied call. Kinds are tested with
// errors.Is through any amount of wrapping (fmt.Errorf with %w,
// errors.Join, Wrap):
//
//	if errors.Is(err, fault.Validation) { ... }
//
// The twelve kinds are Validation, NotFound, Conflict, NotAvailable,
// RateLimit, BudgetExceeded, Timeout, Aborted, Internal, Interrupted,
// PolicyDenied and Forbidden. Kinds lists them and ParseKind finds one by
// its name ("not_found"); a kind marshals to its name in JSON.
//
// # Making errors
//
// New and Wrap build an *Error that carries a kind, the operation that
// failed (lowercase: "deploy", "build resource \"bus\"") and a message that
// says what went wrong and where, formatted with fmt.Sprintf. Wrap also keeps
// a cause. The text reads "op: message: cause", leaving out empty parts.
//
// Sentinel errors of other packages are made with New at package level, so
// that errors.Is matches both the sentinel itself and its kind:
//
//	var ErrBusClosed = fault.New(fault.NotAvailable, "event", "bus closed")
//
// FromContext classifies a context error: a deadline becomes Timeout and a
// cancellation Aborted, with the context error kept in the chain.
//
// # Errors
//
// Messages are lowercase and carry no trailing punctuation. An error keeps
// its cause with %w or Wrap so that errors.As still reaches typed errors
// deeper in the chain. An error may carry more than one kind (Wrap of an
// error that has a kind); errors.Is matches each of them, and the kind of
// the error, KindOf, is the first kind met when the chain is walked depth
// first: the outermost one.
//
// # Concurrency
//
// Kinds are immutable package values, compared by identity; an *Error is
// not changed after it is made. Both are safe to share between goroutines.
package fault
