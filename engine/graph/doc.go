// Package graph is the graph engine: graph documents, their validation,
// the execution loop, conditions, node types (the built-in "script" runs
// sandboxed node scripts, the built-in "delegate" runs another agent
// through host.delegate), checkpoints and resume, parallel waves, and the
// agent.Engine/graph factory.
//
// # Documents
//
// A graph document names nodes (an id, a type, a config object and an
// optional skip condition) and edges between them (from, to — a node or
// End — and an optional condition). Parse reads one from JSON or YAML,
// strictly; Validate checks its structure; Build checks it against the node
// types and the script runtimes and returns an *Engine. Every document
// error is a *DocumentError whose Path names the place (nodes[2].config,
// edges[0].condition).
//
// # Execution
//
// Execute runs waves of nodes. The first frontier is the successors of a
// resume checkpoint's steps, else the WithStartNode override, else the
// entry. Before each wave the engine checks the ctx, polls the host's
// interrupts and checks max_iterations; each node of the wave runs its skip
// condition, has the ${board.path} references of its config resolved
// (ResolveRefs), publishes step start, runs (retried up to max_node_retries
// on a rolled-back board, sharing one host ABI; a sandbox limit is never
// retried and each retry counts against max_iterations) and publishes step
// complete or step error. After the wave the engine checks the board
// against max_board_bytes, polls the interrupts again, counts the wave, writes a
// checkpoint through the host and follows the edges whose condition is
// empty or true. The run ends when the frontier is empty. Run start is
// published after setup and run end from a deferred function, once per
// Execute whatever the outcome.
//
// Conditions and skip conditions are JavaScript expressions evaluated by
// the script runtime named by Options.ScriptRuntimeName over the board
// vars plus __iterations; Build has the runtime compile each one without
// running it.
//
// # Node types
//
// A NodeType builds a Handler for each node of its type at Build. The
// script type runs its node's script in a sandbox.Runtime, a fresh
// environment per call, with a hostabi.Dispatcher made for that call as
// its host ABI: the agent's capability grants, the run's journal and the
// run's interrupt latch. Options.NodeTypes adds types; NodeTypeFactory
// builds graph.NodeType resources (ScriptNodeType) that documents mount
// under the engine's node_type deps. A handler that is a RoleHandler has
// static read and write roles: its required reads are checked before the
// node runs, and after it ran its required writes must be on the board and
// it may have changed nothing its writes do not name.
//
// The inference type (InferenceType) sends a board channel to the
// model.Provider bound under the engine's "model" deps and appends the
// reply, tool calls included, to the channel; it streams deltas, reports
// usage, sets tool_pending, never runs tools, and records each reply in
// the run's journal so that a host with an InferenceReplayer can replay it.
//
// # Parallel waves
//
// With Options.Parallel.Enabled a wave of two or more nodes runs as
// branches, each on a private copy of the board; their deltas are
// speculative until the join accepts or cancels each branch, and their
// board changes merge by the merge strategy.
//
// # Concurrency
//
// An Engine is immutable and safe for concurrent use: every Execute has
// its own state. Branches of a parallel wave run on goroutines that
// Execute starts and waits for before it returns.
//
// # Errors
//
// Errors carry a fault kind. Documents and settings: Validation (Conflict
// for a name bound twice). Runs: Interrupted (an *agent.InterruptedError),
// Timeout, Aborted, BudgetExceeded, Validation, or the kind of a failed
// node's error inside a *NodeError; a failed run-end publish is joined as
// an *agent.RunEndPublishError.
package graph
