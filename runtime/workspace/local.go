package workspace

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"runtime"
	"slices"
	"syscall"

	"github.com/corral-rt/corral/fault"
)

// Read returns the content of the file at p. A directory, or anything else
// that is not a regular file (a named pipe, a device), is a Validation
// error, and a file over the size cap is BudgetExceeded.
func (l *Local) Read(ctx context.Context, p string) ([]byte, error) {
	const op = "workspace read"
	name, err := l.begin(ctx, op, p, false)
	if err != nil {
		return nil, err
	}
	// Checked before opening too: opening a named pipe for reading waits
	// for a writer, whatever ctx says.
	if st, err := l.root.Stat(name); err != nil {
		return nil, classify(op, p, err)
	} else if err := notRegular(op, p, st); err != nil {
		return nil, err
	}
	f, err := l.root.Open(name)
	if err != nil {
		return nil, classify(op, p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, classify(op, p, err)
	}
	if err := notRegular(op, p, st); err != nil {
		return nil, err
	}
	if st.Size() > l.maxBytes {
		return nil, l.tooBig(op, p, st.Size())
	}
	// The size is only a hint: the file may grow while it is read, so the
	// read itself is capped too.
	buf := bytes.NewBuffer(make([]byte, 0, int(st.Size())+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, l.maxBytes+1)); err != nil {
		return nil, classify(op, p, err)
	}
	if int64(buf.Len()) > l.maxBytes {
		return nil, l.tooBig(op, p, int64(buf.Len()))
	}
	return buf.Bytes(), nil
}

// notRegular is the error of reading st, which is not a regular file, or
// nil.
func notRegular(op, p string, st os.FileInfo) error {
	switch {
	case st.IsDir():
		return fault.New(fault.Validation, op, "%q is a directory", p)
	case !st.Mode().IsRegular():
		return fault.New(fault.Validation, op, "%q is not a regular file (%s)", p, st.Mode().Type())
	}
	return nil
}

func (l *Local) tooBig(op, p string, size int64) error {
	return fault.New(fault.BudgetExceeded, op, "%q: %d bytes is over max_file_bytes %d", p, size, l.maxBytes)
}

// Write replaces the file at p with data atomically: the data goes to a
// temporary file beside the target, which is synced, renamed into place,
// and the directory synced. Missing parents are created. On failure the
// temporary file is removed and the old content stays.
func (l *Local) Write(ctx context.Context, p string, data []byte) error {
	const op = "workspace write"
	name, err := l.begin(ctx, op, p, false)
	if err != nil {
		return err
	}
	if int64(len(data)) > l.maxBytes {
		return l.tooBig(op, p, int64(len(data)))
	}
	dir := path.Dir(name)
	if err := l.mkdirAll(dir); err != nil {
		return classifyParent(op, p, err)
	}
	tmp, err := l.writeTemp(dir, data)
	if err != nil {
		return classify(op, p, err)
	}
	if err := l.rename(tmp, name); err != nil {
		_ = l.root.Remove(tmp)
		return classify(op, p, err)
	}
	return classify(op, p, l.syncDir(dir))
}

// classifyParent classifies a failure to create the parents of p: a file
// standing where a directory is needed is a Conflict.
func classifyParent(op, p string, err error) error {
	if !isEscape(err) && (errors.Is(err, syscall.ENOTDIR) || errors.Is(err, os.ErrExist)) {
		return fault.Wrap(fault.Conflict, err, op, "%q: a parent is not a directory", p)
	}
	return classify(op, p, err)
}

func (l *Local) mkdirAll(dir string) error {
	if dir == "." {
		return nil
	}
	return l.root.MkdirAll(dir, dirMode)
}

// writeTemp writes data to a new temporary file in dir and syncs it. On
// failure nothing is left behind.
func (l *Local) writeTemp(dir string, data []byte) (name string, err error) {
	var f *os.File
	for range 4 {
		name = tempName(dir)
		f, err = l.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = l.root.Remove(name)
		return "", err
	}
	return name, nil
}

// syncDir flushes a directory entry change to disk where the platform
// supports it; file systems that refuse to sync a directory are accepted.
func (l *Local) syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := l.root.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	_ = d.Close()
	if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}

// Delete removes the file or empty directory at p. A missing path is
// NotFound; a directory that is not empty is a Conflict.
func (l *Local) Delete(ctx context.Context, p string) error {
	const op = "workspace delete"
	name, err := l.begin(ctx, op, p, false)
	if err != nil {
		return err
	}
	if err := l.root.Remove(name); err != nil {
		return classify(op, p, err)
	}
	return classify(op, p, l.syncDir(path.Dir(name)))
}

// Exists reports whether p names a file or directory. A missing path is
// (false, nil); a path that escapes the root is Forbidden.
func (l *Local) Exists(ctx context.Context, p string) (bool, error) {
	const op = "workspace exists"
	name, err := l.begin(ctx, op, p, true)
	if err != nil {
		return false, err
	}
	if _, err := l.root.Stat(name); err != nil {
		err = classify(op, p, err)
		if fault.Is(err, fault.NotFound) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// List returns the names in directory dir, sorted; directory names end in
// "/". Temporary files of writes in progress are left out. A missing
// directory is NotFound and a file is a Validation error.
func (l *Local) List(ctx context.Context, dir string) ([]string, error) {
	const op = "workspace list"
	name, err := l.begin(ctx, op, dir, true)
	if err != nil {
		return nil, err
	}
	if st, err := l.root.Stat(name); err != nil {
		return nil, classify(op, dir, err)
	} else if !st.IsDir() {
		return nil, fault.New(fault.Validation, op, "%q is not a directory", dir) // and is not opened: a named pipe would block
	}
	f, err := l.root.Open(name)
	if err != nil {
		return nil, classify(op, dir, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, classify(op, dir, err)
	}
	if !st.IsDir() {
		return nil, fault.New(fault.Validation, op, "%q is not a directory", dir)
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, classify(op, dir, err)
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		switch {
		case isTempName(e.Name()):
		case e.IsDir():
			out = append(out, e.Name()+"/")
		default:
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// Rename moves from to to. An existing file at to is replaced atomically;
// missing parents of to are created. A missing from is NotFound.
func (l *Local) Rename(ctx context.Context, from, to string) error {
	const op = "workspace rename"
	src, err := l.begin(ctx, op, from, false)
	if err != nil {
		return err
	}
	dst, err := cleanPath(op, to, false)
	if err != nil {
		return err
	}
	if _, err := l.root.Lstat(src); err != nil {
		return classify(op, from, err)
	}
	if err := l.mkdirAll(path.Dir(dst)); err != nil {
		return classifyParent(op, to, err)
	}
	if err := l.rename(src, dst); err != nil {
		return classify(op, from+" -> "+to, err)
	}
	if err := l.syncDir(path.Dir(dst)); err != nil {
		return classify(op, to, err)
	}
	if path.Dir(src) != path.Dir(dst) {
		return classify(op, from, l.syncDir(path.Dir(src)))
	}
	return nil
}
