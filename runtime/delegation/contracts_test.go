package delegation_test

import (
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
)

// REF 6.2.1: a request names a mode (sync, async, or empty for
// sync), a target, an input, metadata and an idempotency key.
func TestRequestValidate(t *testing.T) {
	t.Parallel()
	good := ask("helper", "hi")
	tests := []struct {
		name string
		edit func(*delegation.Request)
		ok   bool
	}{
		{"sync by default", func(*delegation.Request) {}, true},
		{"async", func(r *delegation.Request) { r.Mode = delegation.ModeAsync }, true},
		{"no input", func(r *delegation.Request) { r.Input = message.Message{} }, true},
		{"unknown mode", func(r *delegation.Request) { r.Mode = "later" }, false},
		{"no target", func(r *delegation.Request) { r.Target = "" }, false},
		{"padded target", func(r *delegation.Request) { r.Target = " helper" }, false},
		{"padded key", func(r *delegation.Request) { r.IdempotencyKey = "k " }, false},
		{"invalid input", func(r *delegation.Request) { r.Input = message.Message{Role: "robot"} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := good.Clone()
			tt.edit(&r)
			err := r.Validate()
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, fault.Validation)
		})
	}
}

// REF 6.2.1: the response invariants. A non-terminal response has
// no output or error; succeeded has no error; failed needs an error;
// canceled has no output.
func TestResponseInvariants(t *testing.T) {
	t.Parallel()
	out := []message.Message{message.NewTextMessage(message.RoleAssistant, "x")}
	e := &delegation.ErrorInfo{Code: "internal", Message: "boom"}
	tests := []struct {
		name string
		r    delegation.Response
		ok   bool
	}{
		{"accepted", delegation.Response{ID: "d", Status: delegation.StatusAccepted}, true},
		{"running", delegation.Response{ID: "d", Status: delegation.StatusRunning, RunID: "run-1"}, true},
		{"succeeded", delegation.Response{ID: "d", Status: delegation.StatusSucceeded, Output: out}, true},
		{"failed", delegation.Response{ID: "d", Status: delegation.StatusFailed, Error: e}, true},
		{"canceled", delegation.Response{ID: "d", Status: delegation.StatusCanceled}, true},
		{"canceled with a reason", delegation.Response{ID: "d", Status: delegation.StatusCanceled, Error: e}, true},
		{"no id", delegation.Response{Status: delegation.StatusAccepted}, false},
		{"unknown status", delegation.Response{ID: "d", Status: "done"}, false},
		{"running with output", delegation.Response{ID: "d", Status: delegation.StatusRunning, Output: out}, false},
		{"accepted with an error", delegation.Response{ID: "d", Status: delegation.StatusAccepted, Error: e}, false},
		{"succeeded with an error", delegation.Response{ID: "d", Status: delegation.StatusSucceeded, Error: e}, false},
		{"failed without an error", delegation.Response{ID: "d", Status: delegation.StatusFailed}, false},
		{"canceled with output", delegation.Response{ID: "d", Status: delegation.StatusCanceled, Output: out}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.r.Validate()
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, fault.Internal)
		})
	}
	info := delegation.ErrorInfoOf(fault.New(fault.PolicyDenied, "x", "no"))
	assert.ErrorIs(t, info.Err(), fault.PolicyDenied, "the kind survives the wire form")
	assert.Nil(t, delegation.ErrorInfoOf(nil))
	assert.ErrorIs(t, (&delegation.ErrorInfo{Code: "nonsense"}).Err(), fault.Internal)
}

func ask(target, text string) delegation.Request {
	return delegation.Request{Target: target, Input: message.NewTextMessage(message.RoleUser, text)}
}
