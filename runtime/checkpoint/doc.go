// Package checkpoint stores run checkpoints: the workspace-backed Store, the
// in-memory Memory, the record format they share (Encode, Decode) and the
// key names the runtime uses (RunKey, SessionKey).
//
// A Store keeps each exec id's checkpoints in a workspace.Workspace. In a
// local workspace it keeps an append-only log per exec id:
//
//	<prefix>/<exec_id>.log                            the log
//	<prefix>/.tmp/<exec_id>.<ns>-<16 hex>.log.tmp     a log being compacted
//
// A log is a magic and checksummed entries (Entry): a snapshot, the whole
// record, and the deltas that follow it, each what one save changed
// (agent.BoardChanges on the checkpoint). A save appends one entry with one
// write and, under SyncWave (the default), one fsync: no temporary file,
// no rename. Load folds the last snapshot and its deltas (Fold). A torn
// tail, the part of an entry a crash left, is never read and is cut off by
// the next save; a large log is compacted by a snapshot written beside it
// and renamed into place. Records of the earlier format,
// <prefix>/<exec_id>.json, are read, and replaced by a log at the exec id's
// next save; a workspace that is not local keeps that format, written to a
// temporary file and renamed over the live one. The prefix defaults to
// "agent/checkpoints". Factory builds a Store from a deployment document:
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
//	    settings: {prefix: agent/checkpoints, sync: wave}   # both optional
//	runtime:
//	  checkpoint_store: checkpoints
//
// Memory keeps the same entries in memory. Chain and Fold are what any
// other backend needs to keep entries too: Chain picks each save's entry
// (a delta when the checkpoint's changes follow the newest entry and the
// Policy allows one, else a snapshot) and Fold reads them back.
//
// Both stores implement agent.CheckpointStore, agent.CheckpointLister and
// agent.CheckpointDeleter, and both pass the conformance suite in
// checkpoint/checkpointtest, which other backends should run too.
//
// # Lifecycle
//
// A Store does not own its workspace: the workspace is closed by whoever
// built it (the runtime, for a document). Close releases what the store
// holds itself (its handle on the log directory) and flushes what SyncTurn
// left unflushed; it waits for the saves in progress, and a save after it
// is NotAvailable.
// Without a store the runtime keeps no checkpoints and sessions no history;
// that choice is the runtime's, not this package's.
//
// # Concurrency
//
// Stores are safe for concurrent use. Of two overlapping saves of one exec
// id, the later to finish wins; neither is ever seen torn. One process
// writes an exec id at a time; a store that finds a log longer or shorter
// than it left it (another store wrote it) reads it again and appends a
// snapshot, never a delta of what it saw before. A log that is not a
// regular file (a symbolic link planted in the workspace) is replaced,
// never appended to through. Save copies the
// checkpoint (by encoding it) before returning, and Load returns a fresh
// value each time, so callers may change what they pass or receive.
//
// # Errors
//
// A bad exec id (blank, containing '/' or '\' or a control character, "."
// or "..", or longer than MaxExecIDBytes) and a checkpoint that fails
// agent.Checkpoint.Validate are Validation errors. A record a load could
// not read back (its log over the workspace's max_file_bytes) is
// BudgetExceeded, and nothing is written. Load of a missing record
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
// Memory writes a new snapshot over the memory of the one it replaces when
// it fits there, so that whole saves of a run, whose records grow slowly,
// mostly allocate nothing.
package checkpoint
