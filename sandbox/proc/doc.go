// Package proc runs a sandbox.Runtime in worker processes: the machinery
// of `isolation: process` (docs/sandbox.md, "Process isolation"). It knows
// no engine: a runner (sandbox/js) hands it a Builder that makes the
// in-process runtime a worker runs, and the parent side is a
// sandbox.Runtime that forwards every call to a worker.
//
//	// first thing in main, through the runner's hook:
//	js.ServeWorkerIfChild() // a worker serves here and exits; a normal process goes on
//
//	rt, err := proc.New(proc.Options{Worker: "js", Settings: settingsJSON, MemoryBytes: 256 << 20})
//	defer rt.Close()
//	out, err := rt.Invoke(ctx, inv) // runs in a worker of inv.Run.Tenant
//
// # Workers
//
// A worker is this same executable, started again with EnvWorker set: its
// main calls ServeIfChild (through js.ServeWorkerIfChild), which serves and
// never returns. The worker reads the start frame, caps its own memory
// (RLIMIT_DATA, soft and hard, and GOMEMLIMIT a little under it) before it
// builds its runtime or reads anything a script wrote, and then runs one
// call at a time. A worker serves one tenant only
// (sandbox.Invocation.Run.Tenant, sandbox.Evaluation.Tenant); each tenant
// has a pool of at most Options.MaxWorkers workers, of which
// Options.Spares are kept started and idle, so that a call does not wait
// for a start when one is ready. A worker idle for Options.IdleTimeout is
// stopped. A worker exits when its input ends, as when its parent is gone:
// it stops its running call first.
//
// # Protocol
//
// Frames over three pipes (the worker's fd 3 carries calls and the
// answers to its host calls, fd 4 what the worker sends, fd 5 cancels): a
// 4-byte length, a type byte, and JSON, or, for the frames every call
// sends (invoke, eval, result), the message's fields in a fixed order
// with its values (board, config, writes, error) as JSON (codec.go). A
// call's frames are read and written with raw system calls on the
// non-blocking pipes, through the poller only when a read must wait, so
// that the Go scheduler does not wake its monitor thread each frame; one
// timer per worker, kept between calls, watches their wall time; and a
// worker's calls share one context until one is cancelled, so that a
// runner keeps what it registered with it. A worker runs each call on the
// goroutine that read it, which also reads the answers to the call's host
// calls (a wait that the call's context ends is woken by a read deadline
// before any byte of a frame is read, and the late answer dropped); one
// more goroutine reads the cancels, each naming its call. A call thus
// costs the worker no switch between goroutines, each of which would add
// a thread wakeup to the two process wakeups of its round trip. No Go value crosses: the invocation goes in as plain values
// (board, config, limits, the names of the host functions), the writes and
// the error come back as plain values, typed errors keep their type
// (*sandbox.LimitError, *sandbox.ScriptError, *agent.InterruptedError) and
// every error its fault kind. Each host call a script makes is a round trip
// to the parent, which runs it on the call's real sandbox.ABI: capabilities
// are checked in the parent only, and the journal is the parent's, so a run
// recorded in one isolation replays in the other. parallel.cancelNode
// crosses the same way. Every frame is size-checked before it is read
// (Options.MaxFrameBytes) and decoded into a fixed struct whose fields are
// checked: a length or count inside a frame is checked against the bytes
// left before anything is allocated for it, and a frame with bytes left
// over is refused; FuzzFrame fuzzes the decoders. A result's values are
// scanned before they are decoded (budget.go): a var's or an evaluation's
// value past the call's max_value_bytes, or values whose decoded heap would
// pass twice the call's memory_bytes, make the frame malformed, so that a
// worker cannot make the parent hold more than the call could. An invoke that repeats the
// previous invoke's host functions, run and limits on the same worker
// leaves them out (invokeMsg.Same), which the worker fills in from that
// invoke: most calls of a run repeat them, and they were most of what a
// small call cost to encode and decode.
//
// # Errors
//
// Besides the runner's own errors, a call fails when its worker dies under
// it, and only that call: a memory_bytes *sandbox.LimitError
// (BudgetExceeded) when the worker's memory cap stopped it (it did not
// exit cleanly, and its crash report, read whole rather than by its last
// line, says out of memory, a refused thread or mapping, the race
// detector's refused shadow, or opens with a fault in the C code beneath
// it), a wall_time *sandbox.LimitError (Timeout) when the parent
// killed it for running past its wall time plus a grace (the worker stops
// its own calls first), the kind of the caller's context when it ignored a
// cancel, Aborted when the runtime closes, Internal for anything else
// (a Go fatal error, a signal from outside), naming the node, the tenant
// and the cause. The worker is replaced: the next call takes a spare or
// starts one. Outcome.CPU is the worker's CPU time for the call (rusage);
// a dead worker's writes are lost (the Outcome is empty).
//
// # Lifecycle and concurrency
//
// A Runtime is safe for concurrent use. New starts one keeper goroutine
// (spares, idle reaping); each worker has one goroutine that waits for its
// exit; the call that holds a worker reads its frames itself. Close stops
// the keeper, kills every worker, fails running calls with Aborted, waits
// for all of it, and is idempotent.
package proc
