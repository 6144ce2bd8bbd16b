package wasm

import (
	"context"
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Check refuses what a first call would refuse, before any call: a module
// past a bound, a module wazero cannot compile, a missing entry, source
// instead of a module; and accepts a good module without running it.
func TestCheck(t *testing.T) {
	rt, err := New(Options{})
	require.NoError(t, err)
	defer rt.Close()
	ok := okModule(t)
	tests := []struct {
		name   string
		script sandbox.Script
		kind   error
		text   string
	}{
		{name: "good module", script: sandbox.Script{Name: "n", Module: ok, Entry: "run"}},
		{name: "missing entry", script: sandbox.Script{Name: "n", Module: ok, Entry: "nope"},
			kind: fault.Validation, text: `"nope"`},
		{name: "not a module", script: sandbox.Script{Name: "n", Module: []byte("\x00asm\x01\x00\x00\x00\x05"), Entry: "run"},
			kind: fault.Validation},
		{name: "source", script: sandbox.Script{Name: "n", Source: "x"}, kind: fault.Validation, text: "not JavaScript"},
		{name: "past a bound", script: sandbox.Script{Name: "n", Entry: "run",
			Module: nodeModule{run: runBody(cat([]byte{1}, uleb(1<<28), []byte{0x7f}), 0x0b)}.bytes()},
			kind: fault.Validation, text: "max_locals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sandbox.CheckScript(context.Background(), rt, tt.script, sandbox.Limits{})
			if tt.kind == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.kind), "%v", err)
			assert.Contains(t, err.Error(), tt.text)
			assert.Contains(t, err.Error(), `"n"`, "the error names the node")
		})
	}
	rt.Close()
	assert.True(t, errors.Is(rt.Check(context.Background(), sandbox.Script{Module: ok, Entry: "run"}), fault.NotAvailable))
}
