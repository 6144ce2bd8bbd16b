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
// cap and engine; an unknown key, a bad duration, a negative number or an
// unknown engine is a Validation error naming the resource.
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
