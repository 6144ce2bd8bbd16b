// Package sandboxtest is the conformance suite of sandbox.Runtime: the
// rules every script runner (sandbox/js, sandbox/wasm) must obey, written
// once and run by each runner's tests:
//
//	func TestConformance(t *testing.T) {
//		sandboxtest.Run(t, func(t *testing.T) sandbox.Runtime {
//			rt, err := js.New(js.Options{})
//			require.NoError(t, err)
//			t.Cleanup(func() { rt.Close() })
//			return rt
//		})
//	}
//
// Each Case states one rule in a sentence (Cases lists them); the sentence
// is logged when the case runs, so a failure says which rule broke.
//
// # Programs
//
// A case runs named programs, not code: the code is per runtime. Programs
// maps a program name to the sandbox.Script of one runtime; ProgramsFor
// returns the suite's own programs for a runtime name (JSPrograms for
// "js"); WasmPrograms makes the wasm runtime's from the module built from
// testdata/wasm/suite. A runtime whose programs are not in this package (WebAssembly
// modules built elsewhere) passes its own to RunPrograms. A case whose
// program the runtime lacks is skipped with a message naming it, so a new
// runner can grow into the suite case by case.
//
// Programs whose names start with expr_ are expressions for Eval; the
// others are node scripts. A runtime that evaluates no expressions says
// so with the NoEval program: the expression cases then require Eval to
// refuse each expression with NotAvailable (WasmPrograms does this). Each program's behaviour is what its cases
// check; a port to another language must keep it.
//
// # Host ABI
//
// Every invocation goes through a real hostabi.Dispatcher built for the
// call, with the grants the case names and a deterministic Host (seeded
// clock and random numbers, recorded events and logs), so that the
// capability, argument and limit rules are those of the host ABI itself.
//
// # Rules for newRuntime
//
// Run calls newRuntime once per case; the runtime must use the default
// limits (sandbox.DefaultLimits) or looser ones, since the cases tighten
// limits per call and expect the tighter one to apply. Cases may run
// invocations concurrently on it. Closing it is the caller's business
// (t.Cleanup).
package sandboxtest
