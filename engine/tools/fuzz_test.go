package tools_test

import (
	"testing"

	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/fault"
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
