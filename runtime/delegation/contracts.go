package delegation

import (
	"context"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// The resource kinds of this package.
const (
	DirectoryKind       = "delegation.Directory"
	ServiceKind         = "delegation.Service"
	SessionProviderKind = "delegation.SessionProvider"
)

// Mode says whether Delegate waits for the delegated run.
type Mode string

// The modes. The empty mode is sync.
const (
	ModeSync  Mode = "sync"  // Delegate returns when the run has ended
	ModeAsync Mode = "async" // Delegate returns at once; Get reports progress
)

// Status is where a delegation is.
type Status string

// The statuses; the last three are terminal.
const (
	StatusAccepted  Status = "accepted"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCanceled  Status = "canceled"
)

// Terminal reports whether s is a final status.
func (s Status) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCanceled
}

// Request asks a Service to run another agent.
type Request struct {
	Mode   Mode   `json:"mode,omitempty"` // "" means sync
	Target string `json:"target"`         // the agent id; required
	// Input is the message the target's run starts with. The zero
	// message means no message (the target's preparers seed the board).
	Input    message.Message   `json:"input"`
	Inputs   map[string]any    `json:"inputs,omitempty"` // become the target board's vars
	Metadata map[string]string `json:"metadata,omitempty"`
	// IdempotencyKey, when set, makes a repeated request replay the first
	// one's result (see Service).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// Validate checks the request's shape: a known mode, a target without
// surrounding whitespace, and a valid input message unless it is the zero
// message. Errors are Validation.
func (r Request) Validate() error {
	const op = "delegate"
	switch {
	case r.Mode != "" && r.Mode != ModeSync && r.Mode != ModeAsync:
		return fault.New(fault.Validation, op, "mode %q is not sync or async", r.Mode)
	case strings.TrimSpace(r.Target) == "" || strings.TrimSpace(r.Target) != r.Target:
		return fault.New(fault.Validation, op, "target %q must be non-empty with no surrounding whitespace", r.Target)
	case strings.TrimSpace(r.IdempotencyKey) != r.IdempotencyKey:
		return fault.New(fault.Validation, op, "idempotency key %q has surrounding whitespace", r.IdempotencyKey)
	}
	if !isZeroMessage(r.Input) {
		if err := r.Input.Validate(); err != nil {
			return fault.Wrap(fault.Validation, err, op, "target %q: input", r.Target)
		}
	}
	return nil
}

// Clone returns a deep copy of r.
func (r Request) Clone() Request {
	out := r
	ar := agent.Request{Message: r.Input, Inputs: r.Inputs, Metadata: r.Metadata}.Clone()
	out.Input, out.Inputs, out.Metadata = ar.Message, ar.Inputs, ar.Metadata
	return out
}

func isZeroMessage(m message.Message) bool {
	return m.Role == "" && len(m.Parts) == 0 && m.Name == "" && len(m.Metadata) == 0
}

// ErrorInfo is the error of a failed delegation in a form that crosses
// process and sandbox boundaries: the name of its fault kind and its text.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrorInfoOf describes err; the code is Internal's when err has no kind.
func ErrorInfoOf(err error) *ErrorInfo {
	if err == nil {
		return nil
	}
	return &ErrorInfo{Code: fault.KindOr(err, fault.Internal).String(), Message: err.Error()}
}

// Err returns an error of the kind Code names (Internal when unknown), so
// that errors.Is works on it; a nil info gives nil.
func (i *ErrorInfo) Err() error {
	if i == nil {
		return nil
	}
	k, ok := fault.ParseKind(i.Code)
	if !ok {
		k = fault.Internal
	}
	return &fault.Error{Kind: k, Msg: i.Message}
}

// Response is what a Service says about one delegation.
type Response struct {
	ID     string            `json:"id"`               // the delegation id
	Target string            `json:"target"`           // the agent it runs
	RunID  string            `json:"run_id,omitempty"` // the target's run, once it started
	Status Status            `json:"status"`
	Output []message.Message `json:"output,omitempty"` // the run's assistant output
	Error  *ErrorInfo        `json:"error,omitempty"`
}

// Validate checks the response invariants: an id and a known status; a
// non-terminal response has no output and no error; succeeded has no
// error; failed has an error; canceled has no output. Errors are Internal:
// a service that breaks them is broken.
func (r Response) Validate() error {
	bad := func(format string, args ...any) error {
		return fault.New(fault.Internal, "delegation response", "%s: "+format, append([]any{r.ID}, args...)...)
	}
	switch {
	case r.ID == "":
		return fault.New(fault.Internal, "delegation response", "id is required")
	case r.Status != StatusAccepted && r.Status != StatusRunning && !r.Status.Terminal():
		return bad("unknown status %q", r.Status)
	case !r.Status.Terminal() && (len(r.Output) > 0 || r.Error != nil):
		return bad("a %s response carries no output and no error", r.Status)
	case r.Status == StatusSucceeded && r.Error != nil:
		return bad("a succeeded response carries no error")
	case r.Status == StatusFailed && r.Error == nil:
		return bad("a failed response needs an error")
	case r.Status == StatusCanceled && len(r.Output) > 0:
		return bad("a canceled response carries no output")
	}
	return nil
}

// Clone returns a deep copy of r.
func (r Response) Clone() Response {
	out := r
	out.Output = message.CloneAll(r.Output)
	if r.Error != nil {
		e := *r.Error
		out.Error = &e
	}
	return out
}

// Target is one agent a Directory offers.
type Target struct {
	ID   string          `json:"id"`
	Card agent.AgentCard `json:"card"`
}

// Directory finds delegation targets. Implementations are safe for
// concurrent use.
type Directory interface {
	// List returns the targets, sorted by id.
	List(ctx context.Context) ([]Target, error)
	// Get returns one target; an unknown id is NotFound.
	Get(ctx context.Context, id string) (Target, error)
}

// Service runs other agents on behalf of a run. Implementations are safe
// for concurrent use.
//
// Delegate refuses a request it cannot run with an error (Validation,
// NotFound for an unknown target, PolicyDenied past the depth limit,
// RateLimit when the service is full, Conflict for an idempotency key
// reused with another request); a run that was started and ended badly is
// a Response with status failed or canceled and a nil error. A sync
// Delegate returns a terminal response; an async one returns accepted.
// Get returns the latest response of a delegation id (NotFound once it
// is forgotten). Every response obeys Response.Validate.
type Service interface {
	Delegate(ctx context.Context, req Request) (Response, error)
	Get(ctx context.Context, id string) (Response, error)
}

// SessionProvider chooses the session a delegated run uses when the
// service runs it as a session turn.
type SessionProvider interface {
	// ContextID returns the context id of the target's session for req; ""
	// means a fresh one.
	ContextID(ctx context.Context, req Request) (string, error)
	// Persistent reports whether the sessions it names outlive one
	// delegation: only then are they durable and resumable.
	Persistent() bool
}
