package proc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

// EnvWorker is the environment variable that makes a process a worker:
// its value names the runner the worker serves ("js"). The parent sets
// it; ServeIfChild reads it.
const EnvWorker = "CORRAL_SANDBOX_WORKER"

// The worker's ends of its pipes: the parent hands them as the first two
// extra files (fd 3 reads from the parent, fd 4 writes to it), so that
// nothing a library prints on stdout can break the protocol.
const (
	workerInFD  = 3
	workerOutFD = 4
)

// Builder builds a worker's in-process runtime from the settings the
// parent passed (Options.Settings).
type Builder func(settings json.RawMessage) (sandbox.Runtime, error)

// ServeIfChild returns at once in a normal process. In a worker process
// started by a Runtime whose Options.Worker is name, it serves calls with
// the runtime build makes until the parent goes away, and exits; it never
// returns. Call it first thing in main (and in TestMain of a test binary
// that starts workers), through the runner's own hook (js.ServeWorkerIfChild).
func ServeIfChild(name string, build Builder) {
	if name == "" || os.Getenv(EnvWorker) != name {
		return
	}
	// Non-blocking, the pipes are read and written through the Go
	// runtime's poller rather than by a thread blocked in a system call.
	pollable(workerInFD)
	pollable(workerOutFD)
	in := os.NewFile(workerInFD, "corral-worker-in")
	out := os.NewFile(workerOutFD, "corral-worker-out")
	if in == nil || out == nil {
		fmt.Fprintln(os.Stderr, "corral worker: the parent's pipes are missing")
		os.Exit(3)
	}
	if err := Serve(in, out, build); err != nil {
		fmt.Fprintln(os.Stderr, "corral worker:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// Serve runs the worker's side of the protocol on in and out: it reads
// the start frame, sets the memory cap on the process, builds the
// runtime, and runs the calls the parent sends, one at a time, until in
// ends. It returns nil when the parent closed in, an error for a protocol
// failure.
func Serve(in io.Reader, out io.Writer, build Builder) error {
	r := bufio.NewReaderSize(in, 64<<10)
	f, err := readFrame(r, DefaultMaxFrameBytes)
	if err != nil {
		return fmt.Errorf("read start: %w", err)
	}
	var start startMsg
	if err := decode(f, frameStart, &start); err != nil {
		return fmt.Errorf("read start: %w", err)
	}
	caps, err := capMemory(start.MemoryBytes)
	if err != nil {
		return fmt.Errorf("cap memory: %w", err)
	}
	rt, err := build(start.Settings)
	if err != nil {
		return fmt.Errorf("build runtime: %w", err)
	}
	s := &server{rt: rt, w: bufio.NewWriterSize(out, 64<<10), max: DefaultMaxFrameBytes}
	defer s.close()
	if err := s.send(frameReady, &readyMsg{Pid: os.Getpid(), Caps: caps}); err != nil {
		return err
	}
	return s.loop(r)
}

// server is a worker's state: the runtime, the writer (shared by the loop
// and the running call), and the running call.
type server struct {
	rt  sandbox.Runtime
	max int

	wmu sync.Mutex
	w   *bufio.Writer

	mu      sync.Mutex
	seq     uint64
	waiting map[uint64]chan frame // host and parallel replies by seq
	cancel  context.CancelFunc    // the running call's, nil when none
	done    chan struct{}         // closed when the running call has replied
	last    *callContext          // the context of the last invoke (the loop's)
}

// context fills in an invoke that repeats the last one's context, or
// keeps its context for the next.
func (s *server) context(m *invokeMsg) error {
	if !m.Same {
		s.last = &callContext{functions: m.Functions, run: m.Run, limits: m.Limits}
		return nil
	}
	if s.last == nil || m.Functions != nil || m.Run != (sandbox.RunInfo{}) || m.Limits != (sandbox.Limits{}) {
		return fmt.Errorf("%w: an invoke that repeats a context it does not have", errFrame)
	}
	m.Functions, m.Run, m.Limits = s.last.functions, s.last.run, s.last.limits
	return nil
}

func (s *server) send(t frameType, msg any) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return writeFrame(s.w, t, msg, s.max)
}

// close stops the running call and closes the runtime.
func (s *server) close() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if c, ok := s.rt.(io.Closer); ok {
		_ = c.Close()
	}
}

func (s *server) loop(r io.Reader) error {
	for {
		f, err := readFrame(r, s.max)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch f.typ {
		case frameInvoke, frameEval:
			if err := s.start(f); err != nil {
				return err
			}
		case frameCancel:
			s.mu.Lock()
			if s.cancel != nil {
				s.cancel()
			}
			s.mu.Unlock()
		case frameHostReply, frameParallelReply:
			if err := s.deliver(f); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: type %d from the parent", errFrame, f.typ)
		}
	}
}

// start decodes a call and runs it on its own goroutine; the loop goes on
// reading the replies to its host calls.
func (s *server) start(f frame) error {
	var run func(ctx context.Context) resultMsg
	switch f.typ {
	case frameInvoke:
		var m invokeMsg
		if err := decode(f, frameInvoke, &m); err != nil {
			return err
		}
		if err := s.context(&m); err != nil {
			return err
		}
		run = func(ctx context.Context) resultMsg { return s.invoke(ctx, &m) }
	default:
		var m evalMsg
		if err := decode(f, frameEval, &m); err != nil {
			return err
		}
		run = func(ctx context.Context) resultMsg { return s.eval(ctx, &m) }
	}
	s.mu.Lock()
	if s.cancel != nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: a call while one runs", errFrame)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.cancel, s.done, s.waiting = cancel, done, map[uint64]chan frame{}
	s.mu.Unlock()
	go func() {
		defer close(done)
		before := cpuTime()
		res := run(ctx)
		res.CPUNs = int64(cpuTime() - before)
		s.mu.Lock()
		s.cancel, s.waiting = nil, nil
		s.mu.Unlock()
		cancel()
		if err := s.send(frameResult, &res); err != nil {
			// The parent is gone or the result does not fit: say so
			// instead, or die trying (the parent then sees the exit).
			res = resultMsg{ID: res.ID, CPUNs: res.CPUNs, Err: encodeError(fault.Wrap(fault.Internal, err, "send result", ""))}
			_ = s.send(frameResult, &res)
		}
	}()
	return nil
}

func (s *server) invoke(ctx context.Context, m *invokeMsg) resultMsg {
	inv := sandbox.Invocation{
		Node: m.Node, Type: m.Type, Config: m.Config, Board: m.Board, BoardBytes: m.BoardBytes,
		Script: sandbox.Script{Name: m.Script.Name, Source: m.Script.Source, Module: m.Script.Module,
			Entry: m.Script.Entry, Config: m.Script.Config},
		ABI: &remoteABI{s: s, functions: m.Functions}, Run: m.Run, Limits: m.Limits,
	}
	if m.Parallel {
		inv.Parallel = s.parallel
	}
	out, err := s.rt.Invoke(ctx, inv)
	settle(err)
	return resultMsg{ID: m.ID, Writes: writeMsgs(out.Writes), Err: encodeError(err)}
}

func (s *server) eval(ctx context.Context, m *evalMsg) resultMsg {
	v, err := s.rt.Eval(ctx, sandbox.Evaluation{Node: m.Node, Expr: m.Expr, Vars: m.Vars, Limits: m.Limits, Tenant: m.Tenant})
	settle(err)
	return resultMsg{ID: m.ID, Value: v, Err: encodeError(err)}
}

// settle returns the garbage of a call stopped for memory to the system
// before the worker answers, so that the next call, which the parent sends
// once it has the answer, does not find the worker's heap at its kernel
// cap and die for what the stopped call left. The GC is charged to the
// stopped call's CPU time.
func settle(err error) {
	var le *sandbox.LimitError
	if errors.As(err, &le) && le.Limit == sandbox.LimitMemory {
		debug.FreeOSMemory()
	}
}

// roundTrip sends a request frame of the running call and waits for its
// reply, or for ctx.
func (s *server) roundTrip(ctx context.Context, t frameType, msg func(seq uint64) any) (frame, error) {
	s.mu.Lock()
	if s.waiting == nil {
		s.mu.Unlock()
		return frame{}, fault.New(fault.Aborted, "host call", "the call has ended")
	}
	s.seq++
	seq := s.seq
	ch := make(chan frame, 1)
	s.waiting[seq] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, seq)
		s.mu.Unlock()
	}()
	if err := s.send(t, msg(seq)); err != nil {
		return frame{}, fault.Wrap(fault.Internal, err, "host call", "")
	}
	select {
	case f := <-ch:
		return f, nil
	case <-ctx.Done():
		return frame{}, fault.FromContext(ctx.Err(), "host call")
	}
}

// deliver hands a reply to the round trip waiting for its seq; a reply
// nobody waits for any more (its wait was cancelled) is dropped.
func (s *server) deliver(f frame) error {
	var seq struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal(f.payload, &seq); err != nil {
		return fmt.Errorf("%w: %v", errFrame, err)
	}
	s.mu.Lock()
	ch := s.waiting[seq.Seq]
	s.mu.Unlock()
	if ch != nil {
		ch <- f
	}
	return nil
}

func (s *server) parallel(nodeID, reason string) bool {
	f, err := s.roundTrip(context.Background(), frameParallel, func(seq uint64) any {
		return &parallelMsg{Seq: seq, Node: nodeID, Reason: reason}
	})
	if err != nil {
		return false
	}
	var m parallelReplyMsg
	return decode(f, frameParallelReply, &m) == nil && m.OK
}

// remoteABI is the worker's sandbox.ABI: every call is a round trip to
// the parent, which runs it on the call's real ABI (capabilities are
// checked there only).
type remoteABI struct {
	s         *server
	functions []string
}

func (a *remoteABI) Functions() []string { return a.functions }

func (a *remoteABI) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	f, err := a.s.roundTrip(ctx, frameHost, func(seq uint64) any { return &hostMsg{Seq: seq, Name: name, Args: args} })
	if err != nil {
		return nil, err
	}
	var m hostReplyMsg
	if err := decode(f, frameHostReply, &m); err != nil {
		return nil, fault.Wrap(fault.Internal, err, "host call", "%s", name)
	}
	if m.Err != nil {
		return nil, decodeError(m.Err)
	}
	return m.Result, nil
}
