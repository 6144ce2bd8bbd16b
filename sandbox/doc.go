// Package sandbox is the contract between the graph engine and the runners
// that execute untrusted node scripts (sandbox/js for JavaScript in goja,
// sandbox/wasm for WebAssembly in wazero).
//
// # Contract
//
// A Runtime runs one Invocation at a time per call, isolated from every
// other: a fresh environment per call, no state carried between calls, and
// the world reachable only through the Invocation's ABI, whose every call
// is capability-checked by package hostabi. Limits bound every call; a limit
// hit is a *LimitError naming the limit and the node, of kind Timeout (wall
// and run time) or BudgetExceeded (everything else). The host process, other
// sessions and the next call are unharmed.
//
// # Limits
//
// DefaultLimits applies to a document that sets none. Runtime settings set
// limits, an agent may only tighten them, and a document never loosens them.
package sandbox
