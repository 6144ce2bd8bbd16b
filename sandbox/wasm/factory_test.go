package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/wasm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The factory decodes its settings strictly: limits, pool size, module
// cap, module bounds and engine; an unknown key, a bad duration, a
// negative number or an unknown engine is a Validation error naming the
// resource.
// REF 3.6
func TestFactorySettings(t *testing.T) {
	f := wasm.Factory()
	assert.Equal(t, resource.Spec{Kind: sandbox.Kind, Impl: wasm.Name}, f.Spec())
	for _, tc := range []struct {
		name, settings string
		ok             bool
	}{
		{"empty", `{}`, true},
		{"all", `{"pool_size": 2, "max_module_bytes": 1048576, "max_modules": 8, "engine": "interpreter",
			"limits": {"wall_time": "2s", "memory_bytes": 33554432, "stack_depth": 64}}`, true},
		{"unknown key", `{"pool": 2}`, false},
		{"bad duration", `{"limits": {"wall_time": "soon"}}`, false},
		{"negative", `{"pool_size": -1}`, false},
		{"negative max_modules", `{"max_modules": -1}`, false},
		{"module bounds", `{"max_functions": 100, "max_types": 10, "max_imports": 10, "max_exports": 10,
			"max_globals": 10, "max_tables": 1, "max_table_elements": 100, "max_segments": 10,
			"max_function_bytes": 1000, "max_locals": 10, "max_nesting": 10, "max_function_values": 100,
			"max_code_values": 1000, "max_branch_pairs": 1000}`, true},
		{"negative bound", `{"max_nesting": -1}`, false},
		{"unknown engine", `{"engine": "jit"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := f.New(context.Background(), resource.Input{Name: "modules", Settings: json.RawMessage(tc.settings)})
			if !tc.ok {
				require.Error(t, err)
				assert.True(t, errors.Is(err, fault.Validation), "%v", err)
				assert.Contains(t, err.Error(), "modules")
				return
			}
			require.NoError(t, err)
			rt := v.(*wasm.Runtime)
			require.NoError(t, rt.Close())
			require.NoError(t, rt.Close(), "Close is idempotent")
		})
	}
}

// Module bounds set in the settings hold; the others take their
// defaults.
func TestFactoryBounds(t *testing.T) {
	v, err := wasm.Factory().New(context.Background(), resource.Input{Name: "modules",
		Settings: json.RawMessage(`{"max_functions": 100, "max_nesting": 50}`)})
	require.NoError(t, err)
	rt := v.(*wasm.Runtime)
	defer rt.Close()
	want := wasm.DefaultModuleBounds()
	want.Functions, want.Nesting = 100, 50
	assert.Equal(t, want, rt.Bounds())
}

// The interpreter runs what the compiler runs; the limits of the runtime
// are its settings with defaults filled in; a closed runtime refuses
// calls with NotAvailable.
func TestInterpreterAndClose(t *testing.T) {
	rt, err := wasm.New(wasm.Options{Engine: wasm.EngineInterpreter, Limits: sandbox.Limits{WallTime: 3 * time.Second}})
	require.NoError(t, err)
	assert.Equal(t, wasm.EngineInterpreter, rt.Engine())
	assert.Equal(t, 3*time.Second, rt.Limits().WallTime)
	assert.Equal(t, int64(sandbox.DefaultMemoryBytes), rt.Limits().MemoryBytes)
	b := agent.NewBoard()
	inv := sandbox.Invocation{Node: "n", Script: sandbox.Script{Module: watModule(t, "ok"), Entry: "run"}}
	require.NoError(t, sandbox.InvokeOn(context.Background(), rt, inv, b))
	assert.Equal(t, true, b.Vars["ok"])
	require.NoError(t, rt.Close())
	_, err = rt.Invoke(context.Background(), inv)
	assert.True(t, errors.Is(err, fault.NotAvailable), "%v", err)
}

// A module larger than max_module_bytes, and JavaScript source, are
// refused with Validation before anything runs.
func TestModuleRefusals(t *testing.T) {
	rt, err := wasm.New(wasm.Options{MaxModuleBytes: 64})
	require.NoError(t, err)
	defer rt.Close()
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "big", Script: sandbox.Script{Module: watModule(t, "ok"), Entry: "run"}}, nil)
	assert.True(t, errors.Is(err, fault.Validation), "%v", err)
	assert.Contains(t, err.Error(), "big")
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "js", Script: sandbox.Script{Source: "1"}}, nil)
	assert.True(t, errors.Is(err, fault.Validation), "%v", err)
}
