package proc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
)

// wireError is an error as it crosses the wire: its kind and message, and
// the fields of the typed errors the contract names (*sandbox.LimitError,
// *sandbox.ScriptError, *agent.InterruptedError), so that the other side
// gets an error of the same type back.
type wireError struct {
	Kind    string           `json:"kind"`
	Message string           `json:"message"`
	Limit   *limitFields     `json:"limit,omitempty"`
	Script  *scriptFields    `json:"script,omitempty"`
	Intr    *agent.Interrupt `json:"interrupt,omitempty"`
	// Context says the error holds a context's error: "canceled" or
	// "deadline", so that errors.Is(err, context.Canceled) holds on the
	// other side too.
	Context string `json:"context,omitempty"`
	// Where is the script position of the host call whose error this is
	// (*sandbox.HostCallError), so that a replay names the line in a
	// worker too.
	Where string `json:"where,omitempty"`
}

type limitFields struct {
	Limit string `json:"limit"`
	Node  string `json:"node"`
	Max   int64  `json:"max"`
}

type scriptFields struct {
	Node    string          `json:"node"`
	Message string          `json:"message"`
	Detail  json.RawMessage `json:"detail,omitempty"`
	Where   string          `json:"where,omitempty"`
}

// check refuses an error whose kind is not one of fault.Kinds.
func (e *wireError) check() error {
	if e == nil {
		return nil
	}
	if _, ok := fault.ParseKind(e.Kind); !ok {
		return fmt.Errorf("unknown error kind %q", e.Kind)
	}
	if e.Script != nil && e.Script.Detail != nil && !json.Valid(e.Script.Detail) {
		return errors.New("script error detail is not JSON")
	}
	return nil
}

// encodeError turns err into its wire form; nil gives nil.
func encodeError(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Kind: fault.KindOr(err, fault.Internal).String(), Message: err.Error()}
	switch {
	case errors.Is(err, context.Canceled):
		w.Context = "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		w.Context = "deadline"
	}
	var hc *sandbox.HostCallError
	if errors.As(err, &hc) {
		w.Where = hc.Where
	}
	var le *sandbox.LimitError
	var se *sandbox.ScriptError
	var ie *agent.InterruptedError
	switch {
	case errors.As(err, &le):
		w.Limit = &limitFields{Limit: le.Limit, Node: le.Node, Max: le.Max}
	case errors.As(err, &ie):
		in := ie.Interrupt
		w.Intr = &in
	case errors.As(err, &se):
		w.Script = &scriptFields{Node: se.Node, Message: se.Message, Detail: se.Detail, Where: se.Where}
		w.Kind = se.Kind.String()
	}
	return w
}

// decodeError turns a checked wire error back into an error of its type.
// What the other side wrapped around a typed error is kept in the
// message: the error's text is the other side's, word for word.
func decodeError(w *wireError) error {
	if w == nil {
		return nil
	}
	kind, ok := fault.ParseKind(w.Kind)
	if !ok {
		kind = fault.Internal
	}
	var typed error
	switch {
	case w.Limit != nil:
		typed = &sandbox.LimitError{Limit: w.Limit.Limit, Node: w.Limit.Node, Max: w.Limit.Max}
	case w.Intr != nil:
		typed = &agent.InterruptedError{Interrupt: *w.Intr}
	case w.Script != nil:
		typed = &sandbox.ScriptError{Node: w.Script.Node, Kind: kind, Message: w.Script.Message,
			Detail: w.Script.Detail, Where: w.Script.Where}
	}
	var ctxErr error
	switch w.Context {
	case "canceled":
		ctxErr = context.Canceled
	case "deadline":
		ctxErr = context.DeadlineExceeded
	}
	var err error = &remoteError{kind: kind, msg: w.Message, typed: typed, ctx: ctxErr}
	if typed != nil && ctxErr == nil && typed.Error() == w.Message {
		err = typed
	}
	if w.Where != "" {
		return &sandbox.HostCallError{Where: w.Where, Err: err}
	}
	return err
}

// remoteError is an error the other side of the wire returned: its text,
// its kind, and the typed error it wrapped, if any.
type remoteError struct {
	kind  *fault.Kind
	msg   string
	typed error
	ctx   error // context.Canceled or context.DeadlineExceeded, or nil
}

func (e *remoteError) Error() string { return e.msg }

// Unwrap gives the kind and the typed error, for errors.Is and errors.As.
func (e *remoteError) Unwrap() []error {
	out := make([]error, 0, 3)
	if e.typed != nil {
		out = append(out, e.typed)
	}
	out = append(out, e.kind)
	if e.ctx != nil {
		out = append(out, e.ctx)
	}
	return out
}

// oomMarkers are what a Go worker writes on stderr when its memory cap
// stops an allocation: the Go runtime's out-of-memory throws (a heap
// allocation past the cap, a mapping the kernel refused with ENOMEM), a
// thread whose stack the cap refused (thread stacks are private writable
// mappings too), and the race detector's failed shadow allocation in a
// -race build.
var oomMarkers = []string{"fatal error: runtime: out of memory", "fatal error: out of memory",
	"runtime: out of memory", "fatal error: runtime: cannot allocate memory",
	"runtime/cgo: pthread_create failed", "runtime: failed to create new OS thread",
	"ThreadSanitizer failed to allocate", "runtime: cannot map pages in arena address space",
	"errno=12)", "errno: 12)"}

// isOOMLine reports whether a line of a worker's stderr says its memory
// cap stopped it.
func isOOMLine(line string) bool {
	// The runtime's own structures throw their own words: "pageAlloc: out
	// of memory", "out of memory allocating heap arena map"...
	if strings.HasPrefix(line, "fatal error:") && strings.Contains(line, "out of memory") {
		return true
	}
	for _, m := range oomMarkers {
		if strings.Contains(line, m) {
			return true
		}
	}
	return false
}

// isCauseLine reports whether a line of a worker's stderr says why it
// died (the first such line is named in the error).
func isCauseLine(line string) bool {
	return strings.HasPrefix(line, "fatal error:") || strings.HasPrefix(line, "panic:") ||
		strings.HasPrefix(line, "runtime:") || strings.HasPrefix(line, "runtime/cgo:") ||
		strings.Contains(line, "ThreadSanitizer") || strings.HasPrefix(line, "fatal ") ||
		isSignalHeader(line)
}

// isSignalHeader reports whether line opens the Go runtime's report of a
// fatal signal ("SIGSEGV: segmentation violation", "SIGABRT: abort").
func isSignalHeader(line string) bool {
	name, _, ok := strings.Cut(line, ": ")
	return ok && len(name) > 3 && strings.HasPrefix(name, "SIG") && strings.ToUpper(name) == name &&
		!strings.ContainsAny(name, " \t")
}

// isForeignFault reports whether line opens the report of a signal that
// the cap explains when no Go fatal error came before it: an abort, a
// segmentation fault or a bus error in the C code beneath the worker.
func isForeignFault(line string) bool {
	return strings.HasPrefix(line, "SIGABRT: ") || strings.HasPrefix(line, "SIGSEGV: ") || strings.HasPrefix(line, "SIGBUS: ")
}
