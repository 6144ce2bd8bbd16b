package docfile

import (
	"io"
	"io/fs"
	"os"

	"github.com/corral-rt/corral/fault"
)

// ReadFile returns the content of the regular file name, at most max bytes
// (max must be > 0). With a root, name is opened inside it (os.Root's
// rules: no escape through .. or a symbolic link); without one, name is a
// path of the file system. See the package documentation for the rules.
func ReadFile(root *os.Root, name string, max int64) ([]byte, error) {
	var f *os.File
	var err error
	if root != nil {
		f, err = root.OpenFile(name, openFlags, 0)
	} else {
		f, err = os.OpenFile(name, openFlags, 0)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, "", "")
	}
	if what := irregular(info.Mode()); what != "" {
		return nil, fault.New(fault.Validation, "", "%s, not a regular file", what)
	}
	if info.Size() > max {
		return nil, tooLarge(info.Size(), max)
	}
	data, err := readAtMost(f, info.Size(), max)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, "", "")
	}
	if int64(len(data)) > max {
		return nil, tooLarge(-1, max)
	}
	return data, nil
}

// readAtMost reads at most max+1 bytes of f, expecting size: the file may
// have changed since it was measured.
func readAtMost(f *os.File, size, max int64) ([]byte, error) {
	buf := make([]byte, min(size, max)+1)
	n, err := io.ReadFull(f, buf)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return buf[:n], nil
	case err != nil:
		return nil, err
	case int64(n) > max:
		return buf, nil
	}
	rest, err := io.ReadAll(io.LimitReader(f, max+1-int64(n)))
	return append(buf, rest...), err
}

func tooLarge(size, max int64) error {
	if size < 0 {
		return fault.New(fault.Validation, "", "the file is larger than %d bytes, the cap", max)
	}
	return fault.New(fault.Validation, "", "the file is %d bytes: larger than %d bytes, the cap", size, max)
}

// irregular names what a file that is not regular is, or "" for a regular
// file.
func irregular(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file (" + m.Type().String() + ")"
}
