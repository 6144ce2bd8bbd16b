// Package wasm runs node scripts compiled to WebAssembly, in wazero (a
// WebAssembly runtime in pure Go), behind the sandbox.Runtime contract. It
// is the only package of the module that imports wazero.
//
//	rt, err := wasm.New(wasm.Options{Limits: sandbox.Limits{WallTime: 2 * time.Second}})
//	defer rt.Close()
//	out, err := rt.Invoke(ctx, sandbox.Invocation{Node: "greet",
//		Script: sandbox.Script{Module: bin, Entry: "node"}, Board: *board, ABI: dispatcher})
//	out.Writes.Apply(board) // the script's writes
//
// In a deployment document the runtime is a resource of kind
// sandbox.Runtime, impl wasm (Factory); a script node names it and gives
// {module: {file | embed}, entry}. docs/sandbox.md describes the settings
// and what the sandbox holds; docs/hostabi.md the ABI byte by byte. Go
// guests are written with package hostabi/guest.
//
// # Modules
//
// A module imports its host functions from module "host" (one per entry
// of the host catalog, bound generically from hostabi.Names), the node API
// (board, signals, results) from module "corral", and, if it wants them,
// the WASI clock, random source, stdout and stderr from
// wasi_snapshot_preview1: no files, environment or arguments. It exports
// its memory, corral_abi_version, corral_alloc and its entries. A module
// whose ABI version differs, or that lacks an export, is refused with a
// Validation error naming both versions or the export.
//
// # Lifecycle
//
// Modules are compiled once per Runtime, keyed by their hash, and once per
// process through a shared compilation cache. Each Invoke runs in a fresh
// instance; a module with a start routine (_initialize: a Go guest, whose
// runtime takes milliseconds to start) is instantiated once per run
// instead, at the first call of a run the engine began (sandbox.RunScoper),
// and its instance serves the run's later calls one at a time until the
// run ends. An instance whose call
// failed is never reused. Close stops running calls (Aborted), waits for
// them and is idempotent.
//
// # Concurrency
//
// A Runtime is safe for concurrent use. At most Options.PoolSize calls run
// at once; a call waits for a slot until its context ends (NotAvailable).
// A call waiting in a blocking host function (hostabi.Func.Blocking:
// askUser, delegate) gives its slot up for the wait and takes one again
// before it continues; its wall time keeps counting.
// A call runs on the caller's goroutine; host functions run on it too.
//
// # Errors
//
// As sandbox.Runtime says: nil for a normal end or signal.done, an
// *agent.InterruptedError, a *sandbox.ScriptError for signal.error (its
// class), for an error the guest returns or a panic (Internal), and for a
// trap or an exit of the guest (Internal, with the start of its output);
// the host's own error when the guest fails with an error a host call gave
// it; a *sandbox.LimitError for a limit; Validation for a module past a
// module bound, that does not compile or lacks an export; Aborted or
// Timeout when the caller's context ends. Every error names the node.
// Eval is NotAvailable.
//
// # Limits
//
// Wall time (the instance is closed when the call's context ends, so a
// looping guest stops), memory (the pages of the guest's memory, checked at
// every growth, and what the tables its code grows reserve), stack depth
// (the engine's call stack, and a Go guest's goroutine stack bound from
// stack_depth), value size (every argument and result crossing the ABI),
// and the host ABI's event and log limits.
//
// Before a module is compiled, its bytes are checked against the runtime's
// ModuleBounds (functions, locals, nesting, the values and the control
// instructions of its code, tables, segments, …): wazero allocates for what
// a module declares, compiles in time that grows faster than the module,
// and does not stop compiling when a context ends. A call waiting for
// another call's compile of the same module waits only until its own
// context ends.
package wasm

// The attack modules of the tests are hand-written WebAssembly text; each
// is committed with its compiled module. Rebuild them with wat2wasm (the
// wabt package of Debian) after changing one; TestWatModulesCurrent checks
// that they match.
//
//go:generate sh ../../testdata/wasm/wat/build.sh
