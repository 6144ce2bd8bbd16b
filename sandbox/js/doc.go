// Package js runs node scripts written in JavaScript, in goja (a
// JavaScript interpreter in pure Go), behind the sandbox.Runtime contract.
// It is the only package of the module that imports goja.
//
//	rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: 2 * time.Second}})
//	defer rt.Close()
//	out, err := rt.Invoke(ctx, sandbox.Invocation{Node: "greet", Script: sandbox.Script{Source: src},
//		Board: *board, ABI: dispatcher})
//	out.Writes.Apply(board) // the script's writes
//
// In a deployment document the runtime is a resource of kind
// sandbox.Runtime, impl js (Factory); docs/sandbox.md describes the
// settings, the script globals and what the sandbox holds.
//
// # Scripts
//
// A script is the body of a function: it runs top to bottom with the
// globals (config, signal, board, host, run, node, parallel, console) in
// scope and may end early with return or signal.done(). Its declarations
// are its own. The globals are hand-written functions on frozen objects;
// no Go value is ever handed to the VM, and values cross as JSON. Date and
// Math.random read the host's clock and random source through the host
// ABI, and dates are UTC.
//
// # Lifecycle
//
// New starts a watchdog goroutine and a preparer goroutine; Close stops
// running calls (Aborted), waits for them and for both goroutines (and a
// GC the watchdog asked for), and is idempotent. VMs are pooled:
// each is locked down once (every built-in frozen, SES-style) and runs
// many calls, each with a new global object that inherits the script API
// (frozen objects whose functions act on the running call) and the frozen
// built-ins; docs/sandbox.md says what isolates what. A VM is dropped after
// a stop, an engine failure, code run by eval or Function, 1 MiB of keys
// given to Symbol.for, or 100 000 calls; its replacement is prepared ahead
// by a goroutine of the runtime, which Close stops. Compiled scripts are
// cached by their kind (script, eval or Function code, expression), name
// and source.
//
// # Concurrency
//
// A Runtime is safe for concurrent use. At most Options.PoolSize calls run
// at once, each in a VM of its own; a call waits for a slot until its
// context ends (NotAvailable). A call waiting in a blocking host function
// (hostabi.Func.Blocking: askUser, delegate) gives its slot up for the wait
// and takes one again before it continues; its wall time keeps counting.
// Each call runs on the caller's goroutine. Its wall time and its caller's
// context stop it on the event: a timer of its VM, and a callback
// registered with the context (context.AfterFunc; kept by the VM across
// the calls that share the context, as a run's nodes do). The runtime's
// watchdog looks at every running call every 2 ms for memory (the memory
// guard, the host memory ceiling) and never waits for a GC. A stop that
// comes late never reaches the next call on the VM: the watchdog's carries
// the call's generation, and the timer and the context callback check the
// call the VM runs when they fire. Tenants never share a VM: a pooled VM
// serves the tenant of its first call only (Invocation.Run.Tenant,
// Evaluation.Tenant).
//
// # Errors
//
// Invoke returns nil when the script ends normally or signals done, an
// *agent.InterruptedError for signal.interrupt, a *sandbox.ScriptError for
// signal.error (its class) and for an uncaught exception (Internal), the
// host's own error for an uncaught host-call error, a *sandbox.LimitError
// for a limit (Timeout for wall time, BudgetExceeded otherwise), Validation
// for a script that does not compile, Aborted or Timeout when the caller's
// context ends. Every error names the node. A limit, a signal or a cancel
// cannot be caught by the script: the VM stops at its next instruction and
// no catch or finally block runs.
//
// # Limits
//
// Wall time, stack depth, memory, value size; the host ABI adds events
// and log bytes. goja has no memory limit of its own: the memory guard is
// documented, with what it does not hold, in docs/sandbox.md.
//
// Every source is scanned before goja parses it (package jsscan: scripts,
// conditions, code made at run time, regular-expression patterns), so that
// no input takes goja's or regexp2's recursive parsers deep enough to
// overflow the Go stack; string concatenations whose operands the program
// text does not bound, and in a program that can make a BigInt the BigInt
// operators whose result can outgrow their operands, are rewritten into
// calls that check the result's size first (package internal/bigop).
package js
