package sandboxtest

import (
	"strings"

	"github.com/corral-rt/corral/sandbox"
)

// NoEval is the name of a program that declares that the runtime
// evaluates no expressions: its Eval must refuse every expression with
// NotAvailable (the sandbox.Runtime contract allows it), and the eval cases
// check exactly that.
const NoEval = "eval_not_available"

// WasmPrograms returns the suite's programs for the wasm runtime: every
// node script program is the export of the same name of suite, the module
// built from testdata/wasm/suite; syntax_error is bytes that are not a
// module; expressions are not available (NoEval).
func WasmPrograms(suite []byte) Programs {
	p := Programs{NoEval: {}}
	for name := range JSPrograms() {
		if strings.HasPrefix(name, "expr_") {
			continue
		}
		p[name] = sandbox.Script{Name: name, Module: suite, Entry: name}
	}
	p["syntax_error"] = sandbox.Script{Name: "syntax_error", Module: []byte("\x00asm\x01\x00\x00\x00this is not a module"), Entry: "syntax_error"}
	return p
}
