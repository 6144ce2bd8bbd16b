package fault

import (
	"context"
	"errors"
	"fmt"
)

// Kind is a class of failure. The kinds are the package-level variables
// below; a Kind is itself an error so that errors.Is(err, fault.NotFound)
// works on any error that carries it.
type Kind struct{ name string }

// Error returns the kind's name, for example "validation".
func (k *Kind) Error() string { return k.String() }

// String returns the kind's name; a nil kind (KindOf of an error without
// one) gives "".
func (k *Kind) String() string {
	if k == nil {
		return ""
	}
	return k.name
}

// MarshalText writes the kind's name, so a kind in a JSON or YAML value
// appears as "not_found". There is no UnmarshalText: kinds are the package
// variables, found by name with ParseKind.
func (k *Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// The error kinds. Every Corral error that a caller may act on carries one.
var (
	// Validation: the input (a document, a request, an argument) is malformed.
	Validation = &Kind{"validation"}
	// NotFound: a named thing does not exist.
	NotFound = &Kind{"not_found"}
	// Conflict: the request collides with existing state (a duplicate, a
	// second setting, an already used builder).
	Conflict = &Kind{"conflict"}
	// NotAvailable: the thing exists but cannot serve now (closed, draining,
	// busy); retrying later may succeed.
	NotAvailable = &Kind{"not_available"}
	// RateLimit: a count or rate limit was reached.
	RateLimit = &Kind{"rate_limit"}
	// BudgetExceeded: a resource budget (memory, events, bytes, iterations)
	// was exhausted.
	BudgetExceeded = &Kind{"budget_exceeded"}
	// Timeout: a deadline passed.
	Timeout = &Kind{"timeout"}
	// Aborted: the operation was cancelled.
	Aborted = &Kind{"aborted"}
	// Internal: a bug or an invariant broken inside Corral or a plug-in.
	Internal = &Kind{"internal"}
	// Interrupted: a run stopped cooperatively at an interrupt.
	Interrupted = &Kind{"interrupted"}
	// PolicyDenied: a policy (a capability grant, a depth limit) refused the
	// call.
	PolicyDenied = &Kind{"policy_denied"}
	// Forbidden: access to the target is not allowed (a path outside its
	// root, a refused credential).
	Forbidden = &Kind{"forbidden"}
)

// Kinds lists every kind, in a stable order. The slice is the caller's.
func Kinds() []*Kind {
	return []*Kind{Validation, NotFound, Conflict, NotAvailable, RateLimit, BudgetExceeded,
		Timeout, Aborted, Internal, Interrupted, PolicyDenied, Forbidden}
}

// ParseKind returns the kind with the given name ("validation",
// "not_found", ...) and whether it exists.
func ParseKind(name string) (*Kind, bool) {
	for _, k := range Kinds() {
		if k.name == name {
			return k, true
		}
	}
	return nil, false
}

// Error is an error with a kind, the operation that failed and an optional
// cause. New and Wrap make one; callers reach it with errors.As.
type Error struct {
	Kind *Kind  // the class of failure; never nil
	Op   string // the operation, lowercase; may be empty
	Msg  string // what went wrong and where
	Err  error  // the cause; may be nil
}

// Error formats as "op: msg: cause", leaving out empty parts; when all
// three are empty it is the kind's name.
func (e *Error) Error() string {
	s := e.Msg
	if e.Op != "" {
		if s == "" {
			s = e.Op
		} else {
			s = e.Op + ": " + s
		}
	}
	if e.Err != nil {
		if s == "" {
			return e.Err.Error()
		}
		return s + ": " + e.Err.Error()
	}
	if s == "" {
		if e.Kind == nil {
			return "error"
		}
		return e.Kind.name
	}
	return s
}

// Unwrap exposes the kind and then the cause to errors.Is and errors.As.
// A nil kind or cause is left out.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// New returns an error of kind k for operation op with a message formatted
// by fmt.Sprintf (write %% for a literal percent sign).
func New(k *Kind, op, format string, args ...any) error {
	return &Error{Kind: k, Op: op, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an error of kind k for operation op that keeps err as its
// cause, with a message formatted as New formats it. A nil err gives nil.
// The message may be empty: Wrap(k, err, "load", "") reads "load: <err>".
// errors.Is matches both k and any kind already in err's chain; KindOf
// returns k.
func Wrap(k *Kind, err error, op, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: k, Op: op, Msg: fmt.Sprintf(format, args...), Err: err}
}

// KindOf returns the first kind found in err's chain, or nil when it has
// none.
func KindOf(err error) *Kind {
	if err == nil {
		return nil
	}
	var k *Kind
	if errors.As(err, &k) {
		return k
	}
	return nil
}

// Is reports whether err carries kind k. It is errors.Is spelled for kinds.
func Is(err error, k *Kind) bool { return errors.Is(err, k) }

// FromContext classifies a context error: context.DeadlineExceeded becomes
// Timeout and context.Canceled becomes Aborted; the original error stays in
// the chain, so errors.Is(err, context.Canceled) still holds. Any other error
// is returned unchanged.
func FromContext(err error, op string) error {
	switch {
	case err == nil:
		return nil
	case KindOf(err) != nil:
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Kind: Timeout, Op: op, Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Kind: Aborted, Op: op, Err: err}
	}
	return err
}

// KindOr returns the kind of err, or def when err carries none.
func KindOr(err error, def *Kind) *Kind {
	if k := KindOf(err); k != nil {
		return k
	}
	return def
}
