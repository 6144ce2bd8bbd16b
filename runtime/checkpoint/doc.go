// Package checkpoint stores run checkpoints: the workspace-backed Store, the
// in-memory Memory, the record format they share (Encode, Decode) and the
// key names the runtime uses (RunKey, SessionKey).
//
// A Store keeps the newest checkpoint of each exec id as one JSON file in a
// workspace.Workspace:
//
//	<prefix>/<exec_id>.json                       the live record
//	<prefix>/.tmp/<exec_id>.<16 hex>.json.tmp     a record being saved
//
// The prefix defaults to "agent/checkpoints". Save writes the temporary file
// and renames it over the live one, so a reader sees the old record or the
// new one and never a half-written file; if the rename fails the temporary
// file is removed. Factory builds a Store from a deployment document:
//
//	resources:
//	  files:
//	    kind: workspace.Workspace
//	    impl: local
//	    settings: {root: ${base}/data}
//	  checkpoints:
//	    kind: checkpoint.Store
//	    impl: workspace
//	    deps: {workspace: files}
//	    settings: {prefix: agent/checkpoints}   # optional
//	runtime:
//	  checkpoint_store: checkpoints
//
// Both stores implement agent.CheckpointStore, agent.CheckpointLister and
// agent.CheckpointDeleter, and both pass the conformance suite in
// checkpoint/checkpointtest, which other backends should run too.
//
// # Lifecycle
//
// A Store holds nothing but its workspace, which it does not own: the
// workspace is closed by whoever built it (the runtime, for a document).
// Without a store the runtime keeps no checkpoints and sessions no history;
// that choice is the runtime's, not this package's.
//
// # Concurrency
//
// Stores are safe for concurrent use. Of two overlapping saves of one exec
// id, the later to finish wins; neither is ever seen torn. Save copies the
// checkpoint (by encoding it) before returning, and Load returns a fresh
// value each time, so callers may change what they pass or receive.
//
// # Errors
//
// A bad exec id (blank, containing '/' or '\' or a control character, "."
// or "..", or longer than MaxExecIDBytes) and a checkpoint that fails
// agent.Checkpoint.Validate are Validation errors. Load of a missing record
// returns (nil, nil). A stored record that is not valid JSON, fails
// Validate or holds another exec id is a *CorruptError of kind Internal,
// matched by errors.Is(err, ErrCorrupt): the request was fine, the stored
// data is not, so it is deliberately not a Validation error. Errors of the
// workspace (Forbidden, NotAvailable, ...) pass through with their kind.
//
// # Records
//
// A record is the JSON encoding of agent.Checkpoint. Decoding ignores
// unknown fields, so that records of a newer version stay readable, and
// returns numbers in the board as float64; Memory stores encoded records
// for the same reason, so that tests using it see what a durable store
// returns. Encode writes exactly the bytes json.Marshal does, but without
// reflection and with one allocation when the board's variables are
// JSON-native; a board holding anything else is encoded by json.Marshal.
// Memory writes a new record over the memory of the one it replaces when it
// fits there, so that the saves of a run, whose records grow slowly,
// mostly allocate nothing.
package checkpoint
