package session

import "github.com/corral-rt/corral/fault"

// Errors of the session layer. Each carries its fault kind, so callers can
// test either the sentinel or the kind with errors.Is.
var (
	// ErrManagerClosed: the manager (or its runtime) is closed.
	ErrManagerClosed = fault.New(fault.NotAvailable, "session", "session manager is closed")
	// ErrManagerDraining: the manager is draining and refuses new leases
	// and turns.
	ErrManagerDraining = fault.New(fault.NotAvailable, "session", "session manager is draining")
	// ErrSessionClosing: the session is closing and takes no new turn.
	ErrSessionClosing = fault.New(fault.NotAvailable, "session", "session is closing")

	// ErrSteerTooLarge: a steer message's JSON encoding is over 32 KiB.
	ErrSteerTooLarge = fault.New(fault.BudgetExceeded, "steer", "message is larger than 32768 bytes")
	// ErrSteerClosed: the turn has ended and takes no more steer messages.
	ErrSteerClosed = fault.New(fault.NotAvailable, "steer", "turn has ended")
	// ErrSteerQueueFull: 8 messages are already queued.
	ErrSteerQueueFull = fault.New(fault.RateLimit, "steer", "queue is full (8 messages)")

	// ErrPromptUnknown: no prompt of this turn has the id.
	ErrPromptUnknown = fault.New(fault.NotFound, "reply", "unknown prompt")
	// ErrPromptDuplicate: the prompt was already replied to.
	ErrPromptDuplicate = fault.New(fault.Conflict, "reply", "prompt already replied")
	// ErrPromptClosed: the prompt is resolved, or the turn has ended.
	ErrPromptClosed = fault.New(fault.NotAvailable, "prompt", "prompt is closed")
)

// Limits of steering (REF 2.3.2).
const (
	MaxSteerMessageBytes = 32 << 10
	MaxSteerQueue        = 8
)
