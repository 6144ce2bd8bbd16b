// Package workspace is a rooted, path-safe directory of files: the place
// where resources such as the checkpoint store keep their data.
//
// A Workspace addresses files by slash-separated paths relative to its root
// ("agent/checkpoints/run-1.json"). Local is the implementation on the local
// file system; Factory builds one from a deployment document:
//
//	resources:
//	  files:
//	    kind: workspace.Workspace
//	    impl: local
//	    settings:
//	      root: ${base}/data     # required; expanded by the document loader
//	      create: true           # mkdir -p the root; default true
//	      max_file_bytes: 1048576 # default 64 MiB
//
// # Path safety
//
// Every path is checked twice. Lexically: an absolute path or a ".." that
// climbs out of the root is Forbidden, a NUL byte or a backslash is a
// Validation error. Then every operation goes through an os.Root, which
// follows symbolic links only while they stay under the root; a link that
// points outside (or is absolute) makes the operation Forbidden. Errors name
// the path as the caller wrote it.
//
// # Writes
//
// Write is atomic: the data goes to a temporary file beside the target
// (named ".corral-tmp-" and 16 hex digits, hidden from List), which is
// synced, renamed over the target, and the directory synced where the
// platform allows. A reader sees the old content or the new one, never a
// mix; on any failure the temporary file is removed and the old content
// stays. Files are created with mode 0640 and directories with 0750, before
// the umask. Reads and writes are capped by max_file_bytes
// (BudgetExceeded).
//
// # Lifecycle
//
// NewLocal (or Open for an existing directory) opens the root and holds it
// until Close. Close is idempotent; operations after it are NotAvailable.
// The root is held by handle, so moving the directory does not redirect the
// workspace.
//
// # Concurrency
//
// A Local is safe for concurrent use. Two overlapping writes of one path
// leave one of the two contents, whole.
//
// # Errors
//
// Errors carry a fault kind: Validation for malformed input (and for
// reading what is not a regular file: a directory, a named pipe, which is
// never opened, so that a read never waits for a writer), Forbidden for
// paths outside the root, NotFound for missing files, Conflict when an entry
// is in the way (a non-empty directory, a file where a directory is needed),
// BudgetExceeded over the size cap, NotAvailable after Close and Internal
// for other failures of the file system. The os error stays in the chain, so
// errors.Is(err, fs.ErrNotExist) holds for a missing file.
package workspace
