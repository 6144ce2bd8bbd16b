// Package docfile reads the files that documents name: the deployment
// document, its layers, and the {file} references of settings, graphs,
// node scripts, tool sources and WebAssembly modules. Every such read goes
// through ReadFile so that a document can neither block the process nor
// make it read more than a cap.
//
// # Rules
//
// ReadFile opens without blocking (O_NONBLOCK where the system has it, so
// that opening a named pipe with no writer returns at once), checks the
// opened descriptor rather than the path (so a symbolic link is judged by
// what it leads to, and a file swapped after a check is still caught),
// refuses anything that is not a regular file — a directory, a named pipe,
// a socket, a device such as /dev/zero — and reads at most max+1 bytes, so
// content over max is refused without reading it whole. A file whose size
// is over max is refused before any byte is read.
//
// # Errors
//
// A refused file is a fault.Validation error that says what it is ("a
// named pipe, not a regular file") or how large it is; the caller, which
// knows how the document names the file, puts the name in front. An error
// of the open itself (a missing file, a denied permission, a path that a
// root refuses) is returned as the open returned it (an *fs.PathError), so
// errors.Is(err, fs.ErrNotExist) and the caller's own classification
// still work.
package docfile
