//go:build linux

package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// A call's frames are read and written on non-blocking pipes with raw
// system calls, waiting on the Go runtime's poller only when a read finds
// nothing or a write finds the pipe full (syscall.RawConn). A plain read
// or write of an *os.File tells the Go scheduler it enters a system call,
// and in a process that was idle — a worker between calls, a parent whose
// call waited — that wakes the runtime's monitor thread each time: one
// more thread woken a frame, for a read or write that never blocks.

// quietReader reads a non-blocking pipe.
type quietReader struct {
	rc    syscall.RawConn
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// quietWriter writes a non-blocking pipe.
type quietWriter struct {
	rc    syscall.RawConn
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// quietRead returns a reader of f, a non-blocking pipe, or f itself when
// it is not one (a raw read of a blocking file would hold its thread
// without the scheduler knowing). One goroutine at a time reads it.
func quietRead(f *os.File) io.Reader {
	rc := nonBlocking(f)
	if rc == nil {
		return f
	}
	r := &quietReader{rc: rc}
	r.fn = r.read
	return r
}

// quietWrite returns a writer of f, as quietRead.
func quietWrite(f *os.File) io.Writer {
	rc := nonBlocking(f)
	if rc == nil {
		return f
	}
	w := &quietWriter{rc: rc}
	w.fn = w.write
	return w
}

// nonBlocking returns f's raw connection when f is non-blocking, else nil.
func nonBlocking(f *os.File) syscall.RawConn {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var flags uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		flags, _, errno = syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	}); err != nil || errno != 0 || flags&syscall.O_NONBLOCK == 0 {
		return nil
	}
	return rc
}

func (r *quietReader) read(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.p[0])), uintptr(len(r.p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait on the poller
		}
		r.n, r.errno = int(n), e
		return true
	}
}

func (r *quietReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p, r.n, r.errno = p, 0, 0
	err := r.rc.Read(r.fn)
	r.p = nil
	switch {
	case err != nil:
		return 0, pollError(err)
	case r.errno != 0:
		return 0, os.NewSyscallError("read", r.errno)
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

func (w *quietWriter) write(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&w.p[0])), uintptr(len(w.p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // the pipe is full: wait on the poller
		}
		w.n, w.errno = int(n), e
		return true
	}
}

func (w *quietWriter) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		w.p, w.n, w.errno = p[done:], 0, 0
		err := w.rc.Write(w.fn)
		w.p = nil
		switch {
		case err != nil:
			return done, pollError(err)
		case w.errno != 0:
			return done, os.NewSyscallError("write", w.errno)
		case w.n <= 0: // a pipe never takes nothing; do not loop on it
			return done, io.ErrShortWrite
		}
		done += w.n
	}
	return done, nil
}

// pollError is an error of the poller as an *os.File's read or write
// reports it: a passed deadline as it is, a file closed under the call
// (the poller's "use of closed file", and anything else it says: the
// file can no longer be waited on) as os.ErrClosed.
func pollError(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed) {
		return err
	}
	return fmt.Errorf("%w: %v", os.ErrClosed, err)
}
