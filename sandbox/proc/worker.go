package proc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

// worker is the parent's handle on one worker process: its pipes (the
// call that holds the worker reads its frames itself) and the goroutine
// that waits for its exit.
type worker struct {
	tenant string
	memory int64 // its cap, in bytes (0: none)
	max    int   // frame bound
	cmd    *exec.Cmd
	pid    int
	caps   string

	wmu sync.Mutex
	w   *bufio.Writer
	wc  io.Closer // the parent's end of the worker's input
	// stopW is the parent's end of the worker's cancel pipe (wmu's).
	stopW *bufio.Writer
	stopC io.Closer

	r      *bufio.Reader // from the worker, read by the one call holding it
	rc     io.Closer
	stop   chan struct{} // closed by kill
	exited chan struct{} // closed when the process has exited and been reaped
	stderr *stderrWatch
	// waitErr is set before exited closes.
	waitErr error

	overrun  overrunWatch // the wall time of its calls
	killOnce sync.Once
	lastUsed time.Time // when it last went idle (pool's lock)
	nextID   uint64    // call ids (the caller's, one call at a time)
	// sent is the context of the last invoke sent (the caller's): an
	// invoke that repeats it leaves it out (invokeMsg.Same).
	sent *callContext
}

// spawnConfig is what starting a worker needs.
type spawnConfig struct {
	path     string   // the executable
	args     []string // its arguments (argv[1:])
	worker   string   // the runner's name, EnvWorker's value
	start    startMsg // the start frame
	maxFrame int
	stderr   io.Writer // also receives the worker's stderr; nil: nothing
}

// spawn starts a worker and waits for its ready frame, or ctx.
func spawn(ctx context.Context, c spawnConfig) (*worker, error) {
	toChild, fromParent, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fromChild, toParent, err := os.Pipe()
	if err != nil {
		_ = toChild.Close()
		_ = fromParent.Close()
		return nil, err
	}
	stopChild, stopParent, err := os.Pipe()
	if err != nil {
		_ = toChild.Close()
		_ = fromParent.Close()
		_ = fromChild.Close()
		_ = toParent.Close()
		return nil, err
	}
	cmd := exec.Command(c.path, c.args...)
	cmd.Env = append(os.Environ(), EnvWorker+"="+c.worker)
	cmd.ExtraFiles = []*os.File{toChild, toParent, stopChild} // fd 3, 4 and 5
	watch := &stderrWatch{also: c.stderr}
	cmd.Stderr = watch
	cmd.SysProcAttr = workerAttr()
	w := &worker{
		tenant: c.start.Tenant, memory: c.start.MemoryBytes, max: c.maxFrame, cmd: cmd,
		w: bufio.NewWriterSize(quietWrite(fromParent), 64<<10), wc: fromParent,
		stopW: bufio.NewWriterSize(stopParent, 64), stopC: stopParent,
		r: bufio.NewReaderSize(quietRead(fromChild), 64<<10), rc: fromChild,
		stop: make(chan struct{}), exited: make(chan struct{}), stderr: watch,
	}
	err = cmd.Start()
	_ = toChild.Close() // the child's ends: the child holds them now
	_ = toParent.Close()
	_ = stopChild.Close()
	if err != nil {
		_ = fromParent.Close()
		_ = fromChild.Close()
		_ = stopParent.Close()
		return nil, err
	}
	w.pid = cmd.Process.Pid
	go w.wait()
	if err := w.handshake(ctx, c.start); err != nil {
		w.kill()
		<-w.exited
		if cause := w.cause(); cause != "" {
			err = fmt.Errorf("%w (%s)", err, cause)
		}
		return nil, err
	}
	return w, nil
}

func (w *worker) handshake(ctx context.Context, start startMsg) error {
	stop := context.AfterFunc(ctx, w.kill)
	defer stop()
	if err := w.send(frameStart, &start); err != nil {
		return err
	}
	f, err := readFrame(w.r, w.max)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("worker exited before it was ready: %w", err)
	}
	var m readyMsg
	if err := decode(f, frameReady, &m); err != nil {
		return err
	}
	w.caps = m.Caps
	return nil
}

// wait reaps the process, closes the parent's end of its output and
// closes exited.
func (w *worker) wait() {
	w.waitErr = w.cmd.Wait()
	_ = w.rc.Close()
	close(w.exited)
}

func (w *worker) send(t frameType, msg any) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return writeFrame(w.w, t, msg, w.max)
}

// cancel asks the worker to stop call id, on the pipe of cancels, which
// the worker reads while the call runs (it reads its input only for the
// replies the call waits for).
func (w *worker) cancel(id uint64) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return writeFrame(w.stopW, frameCancel, &cancelMsg{ID: id}, w.max)
}

// kill stops the worker (SIGKILL) and its reader; it is idempotent and
// does not wait (exited does).
func (w *worker) kill() {
	w.killOnce.Do(func() {
		close(w.stop)
		w.overrun.stop()
		_ = w.cmd.Process.Kill() // its output ends: a read of it returns
		w.wmu.Lock()
		_ = w.wc.Close()
		_ = w.stopC.Close()
		w.wmu.Unlock()
	})
}

// alive reports whether the worker has not been stopped or exited.
func (w *worker) alive() bool {
	select {
	case <-w.stop:
		return false
	case <-w.exited:
		return false
	default:
		return true
	}
}

// cause names why an exited worker died: its exit status, and the first
// line of its crash report that names a cause (a fatal error, a panic, the
// signal of a fault), else its first line on stderr; never a line from
// the middle of a dump (a goroutine, a register).
func (w *worker) cause() string {
	status := "exited"
	if w.waitErr != nil {
		status = w.waitErr.Error()
	}
	if line := w.stderr.cause(); line != "" {
		return status + ": " + line
	}
	return status + ", nothing on stderr"
}

// diedOfMemory reports whether the worker's memory cap ended it: it had a
// cap, it did not exit cleanly, and its crash report, read whole, says
// the kernel refused it memory (stderrWatch.oom).
func (w *worker) diedOfMemory() bool {
	if w.memory <= 0 || (w.cmd.ProcessState != nil && w.cmd.ProcessState.Success()) {
		return false
	}
	return w.stderr.oom()
}

// deathError is the error of a call whose worker died under it: a
// memory_bytes *sandbox.LimitError when its memory cap stopped it,
// Internal otherwise. It names the node and the tenant.
func (w *worker) deathError(op, node string) error {
	if w.diedOfMemory() {
		return fmt.Errorf("%s: tenant %q: worker %d stopped by its memory cap (%s; %s): %w", op, w.tenant, w.pid, w.caps, w.cause(),
			&sandbox.LimitError{Limit: sandbox.LimitMemory, Node: node, Max: w.memory})
	}
	return fault.New(fault.Internal, op, "tenant %q: worker %d died: %s", w.tenant, w.pid, w.cause())
}

// stderrWatch keeps what a worker's stderr says about its death: the
// first line that names a cause, and whether the report says the kernel
// refused memory. It reads lines as they pass, keeping at most one
// partial line, and decides from the report's headers wherever they are,
// not from where the report ends (a dump ends in goroutine frames or
// registers).
type stderrWatch struct {
	also io.Writer

	mu      sync.Mutex
	partial []byte
	first   string // the first line that names a cause
	opening string // the first non-empty line
	outOfMe bool
	// foreign is a fatal signal raised outside Go code (Go's report of it
	// opens with "SIGSEGV: segmentation violation" and the like) with no
	// Go fatal error or panic before it: the C code beneath a Go worker
	// (the C library, the race detector's runtime) aborting or faulting
	// when the cap refused it memory (a thread's stack, a malloc arena,
	// shadow memory).
	foreign, goFatal bool
}

const maxStderrLine = 1024

func (s *stderrWatch) Write(p []byte) (int, error) {
	if s.also != nil {
		_, _ = s.also.Write(p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			room := maxStderrLine - len(s.partial)
			if room > 0 {
				s.partial = append(s.partial, rest[:min(room, len(rest))]...)
			}
			break
		}
		room := maxStderrLine - len(s.partial)
		s.partial = append(s.partial, rest[:min(max(room, 0), i)]...)
		s.line(string(s.partial))
		s.partial = s.partial[:0]
		rest = rest[i+1:]
	}
	return len(p), nil
}

func (s *stderrWatch) line(l string) {
	if s.opening == "" && l != "" {
		s.opening = l
	}
	if isOOMLine(l) {
		s.outOfMe = true
	}
	switch {
	case strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:"):
		s.goFatal = true
	case isForeignFault(l) && !s.goFatal:
		s.foreign = true
	}
	if s.first == "" && isCauseLine(l) {
		s.first = l
	}
}

func (s *stderrWatch) cause() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.first != "":
		return s.first
	case s.opening != "":
		return s.opening
	}
	return string(s.partial)
}

func (s *stderrWatch) oom() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outOfMe || s.foreign || isOOMLine(string(s.partial))
}
