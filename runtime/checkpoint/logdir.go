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

func (d rootDir) Rename(from, to string) error { return d.root.Rename(from, to) }
func (d rootDir) Remove(name string) error     { return d.root.Remove(name) }
func (d rootDir) MkdirAll(name string) error   { return d.root.MkdirAll(name, 0o750) }
func (d rootDir) Close() error                 { return d.root.Close() }

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
