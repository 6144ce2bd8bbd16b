// Package hostabi is the host side of the host ABI: the catalog of host
// functions a node script may call, the capability grants that gate them,
// the Dispatcher that checks and runs every call, and the Journal that
// records the non-deterministic answers for replay.
//
// # Catalog
//
// Catalog lists each host function (sorted by name) with the capability it
// needs, the JSON shape of its arguments and result, and whether its result
// is non-deterministic. Arguments are always a JSON array and results are
// JSON, so the same catalog serves the JavaScript runner (the host global)
// and WebAssembly guests (imports of module "host").
//
// # Capabilities
//
// A call succeeds only when the agent's document grants the function's
// capability (Granted: a nil list grants DefaultGrants, a listed set is
// exact) and the turn's host provides it (found with
// agent.CapabilityFromHost). Anything else is a PolicyDenied error naming
// the function, the capability and the node; the host object is never
// reached. delegate is granted per target: "delegate" grants every agent
// and "delegate:<id>" one, checked once the arguments name the target; the
// host must offer a delegation service (delegation.ServiceFromHost). drainSteer is the one exception on the host side: a host
// without a steer source answers an empty array, as a delegated sub-run
// that has its steer source withheld must still be able to run the
// canonical steer node.
//
// # Lifecycle
//
// A Dispatcher serves one node call: NewDispatcher(Config{Host, Run, Node,
// Limits, Journal}) before the script starts, Call for every host function
// the script calls, and nothing to close. Its event and log counters are
// per dispatcher, so MaxEvents, MaxEventBytes and MaxLogBytes bound one
// node call. The Journal belongs to the run and outlives its dispatchers;
// an InterruptLatch shared by a run's dispatchers lets the engine see an
// interrupt that a script's checkInterrupt took from the host.
//
// # Concurrency
//
// Dispatcher, Journal and InterruptLatch are safe for concurrent use.
// Entries from concurrent callers (the branches of a parallel wave) are
// journaled in the order their calls returned.
//
// # Errors
//
// Every error carries a fault kind: NotFound (an unknown function),
// PolicyDenied (a refused capability), Validation (malformed arguments,
// named by function and argument index), BudgetExceeded (a
// *sandbox.LimitError naming the limit and the node), Timeout or Aborted (a
// context that ended), or the kind of the host's own error. Errors cross to
// a script as ErrorInfo{code, message}, where code is the kind's name.
// Call never panics on any input.
package hostabi
