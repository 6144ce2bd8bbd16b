package sandbox

import (
	"encoding/json"
	"fmt"

	"github.com/corral-rt/corral/fault"
)

// ScriptError is an error a script raised: a signal.error call, or an
// exception the script threw and did not catch. Its kind is the class the
// script named (SignalKind) or Internal for an uncaught exception.
type ScriptError struct {
	Node    string          // the node whose script raised it
	Kind    *fault.Kind     // the class; never nil
	Message string          // the script's message
	Detail  json.RawMessage // signal.error's detail as JSON; nil when none
	Where   string          // script position ("name:line:col"), when known
}

func (e *ScriptError) Error() string {
	msg := fmt.Sprintf("node %q: script %s", e.Node, e.Kind)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Where != "" {
		msg += " (at " + e.Where + ")"
	}
	return msg
}

// Unwrap gives the kind, so errors.Is(err, fault.NotFound) holds for a
// script that signalled not_found.
func (e *ScriptError) Unwrap() error { return e.Kind }

// SignalKinds are the classes a script may name in signal.error, in the
// order the documentation lists them.
func SignalKinds() []*fault.Kind {
	return []*fault.Kind{fault.Validation, fault.NotFound, fault.BudgetExceeded, fault.PolicyDenied,
		fault.NotAvailable, fault.Internal}
}

// SignalKind maps a class name from a script (signal.error's kind) to its
// fault kind. The names are validation, not_found, budget_exceeded,
// policy_denied, not_available and internal; any other name, the empty one
// included, is Internal.
func SignalKind(name string) *fault.Kind {
	for _, k := range SignalKinds() {
		if k.String() == name {
			return k
		}
	}
	return fault.Internal
}

// HostCallError is the error of a host call that a script did not catch,
// with the script position of the call ("name:line:col") where the runner
// can tell it. Its text is Err's; it unwraps to Err, so the call's error
// (and its kind) stays reachable with errors.As and errors.Is.
type HostCallError struct {
	Where string
	Err   error
}

func (e *HostCallError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *HostCallError) Unwrap() error { return e.Err }
