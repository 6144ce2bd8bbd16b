package tools_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox"
)

// FuzzSchema compiles arbitrary schemas and validates arbitrary arguments
// against the ones that compile: neither may panic or hang, and every
// error is a Validation error.
func FuzzSchema(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`), []byte(`{"a":"x"}`))
	f.Add([]byte(`{"type":["integer","null"],"enum":[1,2.0,null]}`), []byte(`2`))
	f.Add([]byte(`{"type":"array","items":{"type":"object","additionalProperties":false}}`), []byte(`[{},{"x":1}]`))
	f.Add([]byte(`{"additionalProperties":{"enum":[{"a":[1]}]}}`), []byte(`{"k":{"a":[1.0]}}`))
	f.Add([]byte(`{"minLength":1}`), []byte(`"x"`))
	f.Add([]byte(`{"type":"integer"}`), []byte(`1e999999999`))
	f.Add([]byte(`{"$defs":{"n":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"$ref":"#/$defs/n"}`), []byte(`null`))
	f.Add([]byte(`{"properties":{"a":{"$ref":"https://example.com/a.json"}}}`), []byte(`{"a":1}`))
	f.Add([]byte(`{"type":"string","pattern":"^(a+)+$","minLength":2}`), []byte(`"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"`))
	f.Add([]byte(`{"type":"number","minimum":1e-5,"multipleOf":0.01}`), []byte(`1e-999999`))
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		s, err := tools.CompileSchema(schema)
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("compile error without Validation kind: %v", err)
			}
			return
		}
		if err := s.Validate(args); err != nil && !fault.Is(err, fault.Validation) {
			t.Fatalf("validate error without Validation kind: %v", err)
		}
	})
}

// FuzzArguments runs a call with arbitrary arguments text through an
// assembly (in a runtime that only echoes its config): the call never
// panics, the batch never fails, and arguments the schema refuses never
// reach the runtime.
func FuzzArguments(f *testing.F) {
	var runs atomic.Int64
	rt := &countingRuntime{fakeRuntime{name: "fake", fn: func(_ context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
		runs.Add(1)
		return sandbox.Outcome{Writes: sandbox.Writes{{Op: sandbox.SetVar, Name: "result", Value: inv.Config}}}, nil
	}}}
	a, err := tools.New(context.Background(), tools.Settings{ScriptRuntimeName: "fake", Tools: []tools.ToolSettings{{
		Name:       "t",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"s":{"enum":["a","b"]}},"required":["n"]}`),
		Source:     json.RawMessage(`"echo"`),
	}}}, map[string]sandbox.Runtime{"fake": rt})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`{"n":1}`, `{"n":1.5}`, `{"n":1,"s":"c"}`, ``, `[]`, `{"n":1e400}`, `{"n":`, "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		before := runs.Load()
		res, err := a.Execute(context.Background(), tool.Batch{Host: agenttest.NewHost(), Node: "tools",
			Calls: []message.ToolCall{{ID: "c", Name: "t", Arguments: args}}})
		if err != nil || len(res) != 1 || res[0].ToolCallID != "c" {
			t.Fatalf("Execute(%q) = %v, %v", args, res, err)
		}
		ran := runs.Load() > before
		if res[0].IsError == ran {
			t.Fatalf("Execute(%q): is_error %t, ran %t: %s", args, res[0].IsError, ran, res[0].Content)
		}
	})
}

// countingRuntime runs its function without keeping the invocations.
type countingRuntime struct{ fakeRuntime }

func (c *countingRuntime) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	return c.fn(ctx, inv)
}
