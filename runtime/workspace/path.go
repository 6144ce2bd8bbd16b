package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/corral-rt/corral/fault"
)

// tempPrefix starts the name of the temporary file that Write creates beside
// its target. List hides names made of tempPrefix and 16 hex digits.
const tempPrefix = ".corral-tmp-"

// CleanPath checks p as a workspace path and returns its clean,
// slash-separated form, as every operation of a Workspace checks it before
// touching the file system. An absolute path or one that climbs out of the
// root with ".." is Forbidden: leaving the workspace is a policy matter,
// whoever asks. A NUL byte, a backslash or the root itself ("" or ".") is a
// Validation error. op prefixes the error's message.
//
// Other packages that build workspace paths from settings (the checkpoint
// store's prefix) check them with CleanPath, so that an escape is Forbidden
// wherever it is written.
func CleanPath(op, p string) (string, error) { return cleanPath(op, p, false) }

// cleanPath checks a workspace path and returns its clean, slash-separated
// form. The empty path and "." name the root itself, which only allowRoot
// accepts. A NUL byte or a backslash is a Validation error; an absolute path
// or one that climbs out of the root with ".." is Forbidden.
func cleanPath(op, p string, allowRoot bool) (string, error) {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return "", fault.New(fault.Validation, op, "%q: a path must not contain a NUL byte", p)
	case strings.IndexByte(p, '\\') >= 0:
		return "", fault.New(fault.Validation, op, "%q: paths are slash-separated; a backslash is not allowed", p)
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return "", fault.New(fault.Forbidden, op, "%q: absolute paths are not allowed; paths are relative to the workspace root", p)
	}
	if p == "" {
		p = "."
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fault.New(fault.Forbidden, op, "%q: path escapes the workspace root", p)
	}
	if clean == "." && !allowRoot {
		return "", fault.New(fault.Validation, op, "%q: a file path is required, not the workspace root", p)
	}
	return clean, nil
}

// classify turns an error of the os package into a fault error of the right
// kind that names the workspace path p.
func classify(op, p string, err error) error {
	switch {
	case err == nil:
		return nil
	case isEscape(err):
		return fault.Wrap(fault.Forbidden, err, op, "%q: path escapes the workspace root", p)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fault.Wrap(fault.NotFound, err, op, "%q does not exist", p)
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTEMPTY):
		return fault.Wrap(fault.Conflict, err, op, "%q collides with an existing entry", p)
	case errors.Is(err, fs.ErrPermission):
		return fault.Wrap(fault.Forbidden, err, op, "%q: permission denied", p)
	case errors.Is(err, os.ErrClosed):
		return fault.Wrap(fault.NotAvailable, err, op, "%q: workspace is closed", p)
	case errors.Is(err, syscall.EISDIR):
		return fault.Wrap(fault.Validation, err, op, "%q is a directory", p)
	}
	return fault.Wrap(fault.Internal, err, op, "%q", p)
}

// isEscape reports whether err is os.Root's refusal of a path that leaves
// the root (through "..", an absolute symlink or a symlink pointing
// outside). The os package does not export that error, so it is recognised
// by its text; the workspace tests pin the behaviour.
func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// tempName returns a fresh temporary name in dir ("." for the root).
func tempName(dir string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return path.Join(dir, tempPrefix+hex.EncodeToString(b[:]))
}

// isTempName reports whether a directory entry is one of Write's temporary
// files.
func isTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok || len(rest) != 16 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
