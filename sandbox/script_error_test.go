package sandbox_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
)

// Signal classes map by name; an unknown class is internal.
// REF 9.8
func TestSignalKind(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]*fault.Kind{
		"validation": fault.Validation, "not_found": fault.NotFound, "budget_exceeded": fault.BudgetExceeded,
		"policy_denied": fault.PolicyDenied, "not_available": fault.NotAvailable, "internal": fault.Internal,
		"interrupted": fault.Internal, "timeout": fault.Internal, "": fault.Internal, "VALIDATION": fault.Internal,
	} {
		assert.Equal(t, want, sandbox.SignalKind(name), name)
	}
	assert.Len(t, sandbox.SignalKinds(), 6)
}

func TestScriptError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("wrapped: %w", &sandbox.ScriptError{Node: "n1", Kind: fault.NotFound, Message: "gone",
		Detail: json.RawMessage(`{"id":1}`), Where: "n1:3:7"})
	assert.True(t, errors.Is(err, fault.NotFound))
	var se *sandbox.ScriptError
	assert.True(t, errors.As(err, &se))
	assert.Equal(t, `wrapped: node "n1": script not_found: gone (at n1:3:7)`, err.Error())
	assert.Equal(t, `node "x": script internal`, (&sandbox.ScriptError{Node: "x", Kind: fault.Internal}).Error())
}
