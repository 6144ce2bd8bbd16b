package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"syscall"
)

// logDir is the directory of the log files as the store writes it: an
// os.Root at the prefix, or a test's wrapper that counts what it does.
type logDir interface {
	OpenFile(name string, flag int, perm fs.FileMode) (logFile, error)
	Lstat(name string) (fs.FileInfo, error)
	Rename(from, to string) error
	Remove(name string) error
	MkdirAll(name string) error
	// SyncDir flushes the entries of directory name ("." for the prefix).
	SyncDir(name string) error
	Close() error
}

// logFile is an open log file.
type logFile interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
	Close() error
}

// rootDir is a logDir on an os.Root: every name stays inside it.
type rootDir struct{ root *os.Root }

func (d rootDir) OpenFile(name string, flag int, perm fs.FileMode) (logFile, error) {
	f, err := d.root.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil logFile
	}
	return f, nil
}

func (d rootDir) Lstat(name string) (fs.FileInfo, error) { return d.root.Lstat(name) }
func (d rootDir) Rename(from, to string) error           { return d.root.Rename(from, to) }
func (d rootDir) Remove(name string) error               { return d.root.Remove(name) }
func (d rootDir) MkdirAll(name string) error             { return d.root.MkdirAll(name, 0o750) }
func (d rootDir) Close() error                           { return d.root.Close() }

// SyncDir syncs a directory where the platform supports it; a file system
// that refuses to sync a directory is accepted, as the workspace does.
func (d rootDir) SyncDir(name string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	f, err := d.root.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	_ = f.Close()
	if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}

// errNotPlain says that a log's name is not a regular file (a symbolic
// link planted in the workspace, say): the log is written anew, replacing
// the name, never appended to through it.
var errNotPlain = errors.New("checkpoint log: not a regular file")

// openPlain opens the log at name for appending once it is sure that name
// is a regular file of length size, as the store last saw it: errNotPlain
// when it is not a regular file, errStale when its length differs.
func openPlain(dir logDir, name string, size int64) (logFile, error) {
	if fi, err := dir.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, errNotPlain
	}
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fsError(err, name)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = fsError(err, name)
	case !fi.Mode().IsRegular():
		err = errNotPlain
	case fi.Size() != size:
		err = errStale
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}
