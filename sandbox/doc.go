// Package sandbox is the contract between the graph engine and the runners
// that execute untrusted node scripts (sandbox/js for JavaScript in goja,
// sandbox/wasm for WebAssembly in wazero).
//
// # Contract
//
// A Runtime runs one Invocation at a time per call, isolated from every
// other: its own global environment per call, and the world reachable only
// through the Invocation's ABI, whose every call is capability-checked by
// package hostabi. The contract carries plain values both ways: the call
// gets the board as a value it never writes (Invocation.Board) and returns
// the script's writes (Outcome.Writes), which the caller applies and
// measures (Writes.ApplyMeasured). Nothing in an Invocation points into
// the caller's state and nothing a runner reports is taken on trust, so
// that a runner can live in another process. BoardView is the runner's
// side of it: the board under a call's writes, each checked against
// max_board_bytes before it is made. Limits bound every call; a limit
// hit is a *LimitError naming the limit and the node, of kind Timeout (wall
// and run time) or BudgetExceeded (everything else). The host process, other
// sessions and the next call are unharmed.
//
// # Limits
//
// DefaultLimits applies to a document that sets none. Runtime settings set
// limits, an agent may only tighten them, and a document never loosens them.
package sandbox
