package workspace

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/corral-rt/corral/fault"
)

// Workspace is a directory of files addressed by slash-separated paths
// relative to its root.
//
// Rules every implementation obeys:
//   - a path is relative and stays under the root: an absolute path, a ".."
//     that climbs out or a symbolic link that points out is Forbidden, and
//     the error names the path;
//   - a NUL byte, a backslash or the root itself where a file is expected
//     is a Validation error;
//   - a missing file is NotFound;
//   - Write replaces the file atomically: a reader sees the old content or
//     the new one, never a mix, and parent directories are created;
//   - the methods are safe for concurrent use.
type Workspace interface {
	// Read returns the content of the file at path.
	Read(ctx context.Context, path string) ([]byte, error)
	// Write replaces the file at path with data, creating parents.
	Write(ctx context.Context, path string, data []byte) error
	// Delete removes the file (or empty directory) at path.
	Delete(ctx context.Context, path string) error
	// Exists reports whether path names a file or directory.
	Exists(ctx context.Context, path string) (bool, error)
	// List returns the names in directory dir ("" or "." for the root),
	// sorted; directory names end in "/".
	List(ctx context.Context, dir string) ([]string, error)
	// Rename moves from to to, replacing to atomically, creating its
	// parents.
	Rename(ctx context.Context, from, to string) error
	// Root returns the workspace's root, for messages and logs.
	Root() string
}

// DefaultMaxFileBytes is the size cap on files read and written when no
// other is set: 64 MiB.
const DefaultMaxFileBytes int64 = 64 << 20

// maxCap bounds max_file_bytes so that a read can ask for one byte more
// than the cap without overflow.
const maxCap int64 = 1 << 62

// Modes of what a workspace creates, before the process umask.
const (
	fileMode fs.FileMode = 0o640
	dirMode  fs.FileMode = 0o750
)

// Config configures NewLocalWithConfig. The zero value is what NewLocal
// uses.
type Config struct {
	// MustExist refuses a missing root (NotFound). false: a missing root is
	// created with its parents.
	MustExist bool
	// MaxFileBytes caps the size of a file that Read returns or Write
	// accepts. 0: DefaultMaxFileBytes; a negative cap is a Validation
	// error.
	MaxFileBytes int64
}

// Local is a Workspace on the local file system. Every operation goes
// through an os.Root, so symbolic links are followed only while they stay
// under the root. Close releases the root.
type Local struct {
	root     *os.Root
	dir      string
	maxBytes int64
	// rename is root.Rename; tests replace it to inject failures.
	rename func(from, to string) error

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var (
	_ Workspace = (*Local)(nil)
	_ io.Closer = (*Local)(nil)
)

// NewLocal opens the directory root as a workspace with the zero Config: a
// missing root is created with its parents. A relative root is taken from
// the process's working directory.
func NewLocal(root string) (*Local, error) { return NewLocalWithConfig(root, Config{}) }

// NewLocalWithConfig is NewLocal configured by cfg.
func NewLocalWithConfig(root string, cfg Config) (*Local, error) {
	const op = "open workspace"
	maxBytes := cfg.MaxFileBytes
	switch {
	case strings.TrimSpace(root) == "":
		return nil, fault.New(fault.Validation, op, "root is required")
	case maxBytes < 0:
		return nil, fault.New(fault.Validation, op, "%q: max_file_bytes must not be negative, got %d", root, maxBytes)
	case maxBytes == 0:
		maxBytes = DefaultMaxFileBytes
	case maxBytes > maxCap:
		maxBytes = maxCap
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "%q", root)
	}
	if !cfg.MustExist {
		if err := os.MkdirAll(abs, dirMode); err != nil {
			return nil, fault.Wrap(rootKind(err), err, op, "create root %q", root)
		}
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fault.Wrap(rootKind(err), err, op, "root %q", root)
	}
	return &Local{root: r, dir: abs, maxBytes: maxBytes, rename: r.Rename}, nil
}

// Open opens an existing directory as a workspace with the default
// settings; a missing root is NotFound.
func Open(root string) (*Local, error) { return NewLocalWithConfig(root, Config{MustExist: true}) }

func rootKind(err error) *fault.Kind {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fault.NotFound
	case errors.Is(err, fs.ErrPermission):
		return fault.Forbidden
	}
	return fault.Validation
}

// Root returns the absolute path of the workspace's root.
func (l *Local) Root() string { return l.dir }

// MaxFileBytes returns the size cap on files.
func (l *Local) MaxFileBytes() int64 { return l.maxBytes }

// Close releases the root. It is idempotent and returns the first result
// again; operations after Close are NotAvailable.
func (l *Local) Close() error {
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		l.closeErr = l.root.Close()
	})
	return l.closeErr
}

// begin checks the context, the closed flag and the path of an operation.
func (l *Local) begin(ctx context.Context, op, p string, allowRoot bool) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fault.FromContext(err, op)
	}
	if l.closed.Load() {
		return "", fault.New(fault.NotAvailable, op, "%q: workspace is closed", p)
	}
	return cleanPath(op, p, allowRoot)
}
