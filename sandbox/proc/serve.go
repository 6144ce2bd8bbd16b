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
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

// EnvWorker is the environment variable that makes a process a worker:
// its value names the runner the worker serves ("js"). The parent sets
// it; ServeIfChild reads it.
const EnvWorker = "CORRAL_SANDBOX_WORKER"

// The worker's ends of its pipes: the parent hands them as the first
// three extra files (fd 3 reads calls and replies from the parent, fd 4
// writes to it, fd 5 reads cancels), so that nothing a library prints on
// stdout can break the protocol.
const (
	workerInFD   = 3
	workerOutFD  = 4
	workerStopFD = 5
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
	pollable(workerStopFD)
	in := os.NewFile(workerInFD, "corral-worker-in")
	out := os.NewFile(workerOutFD, "corral-worker-out")
	stop := os.NewFile(workerStopFD, "corral-worker-stop")
	if in == nil || out == nil || stop == nil {
		fmt.Fprintln(os.Stderr, "corral worker: the parent's pipes are missing")
		os.Exit(3)
	}
	if err := Serve(in, stop, out, build); err != nil {
		fmt.Fprintln(os.Stderr, "corral worker:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// Input is what a worker reads from its parent: a pipe whose reads a
// deadline can end (an *os.File of a non-blocking pipe).
type Input interface {
	io.ReadCloser
	SetReadDeadline(t time.Time) error
}

// Serve runs the worker's side of the protocol on in, stop and out: it
// reads the start frame, sets the memory cap on the process, builds the
// runtime, and runs the calls the parent sends on in, one at a time and
// each on the goroutine that read it, until in ends; stop carries the
// parent's cancels, read meanwhile by one goroutine of its own. It
// returns nil when the parent closed in, an error for a protocol failure;
// it closes in and stop and waits for that goroutine before it returns.
func Serve(in, stop Input, out io.Writer, build Builder) error {
	var rd io.Reader = in
	if f, ok := in.(*os.File); ok {
		rd = quietRead(f)
	}
	r := bufio.NewReaderSize(rd, 64<<10)
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
	if f, ok := out.(*os.File); ok {
		out = quietWrite(f)
	}
	s := &server{rt: rt, w: bufio.NewWriterSize(out, 64<<10), max: DefaultMaxFrameBytes, in: in, r: r}
	defer s.close()
	if err := s.send(frameReady, &readyMsg{Pid: os.Getpid(), Caps: caps}); err != nil {
		return err
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		s.watch(stop)
	}()
	err = s.loop()
	_ = in.Close()
	_ = stop.Close()
	<-watched
	return err
}

// server is a worker's state: the runtime, the input (read by the loop,
// and by the running call, which runs on the loop's goroutine, for its
// replies), the writer, and the running call, which the goroutine that
// reads cancels stops.
type server struct {
	rt  sandbox.Runtime
	max int
	in  Input
	r   *bufio.Reader // in, buffered; read under rmu
	rmu sync.Mutex
	seq uint64 // of the last host or parallel call (rmu's)

	wmu sync.Mutex
	w   *bufio.Writer

	mu        sync.Mutex
	running   uint64             // the id of the running call, 0 when none
	cancel    context.CancelFunc // the running call's, nil when none
	cancelled uint64             // the highest call id the parent cancelled
	gone      bool               // the parent is gone: no call runs any more
	last      *callContext       // the context of the last invoke (the loop's)
	// ctx and stopCtx are the context the calls run with, one after
	// another, until one of them is cancelled: then the next call gets a
	// new one (the loop's). A runner keeps what it registers with a
	// context across the calls that share it (js: a context.AfterFunc),
	// and a context cancelled at the end of every call would run that
	// callback, on a goroutine of its own, after every call.
	ctx     context.Context
	stopCtx context.CancelFunc
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

// callContext returns the context of the next call and its cancel: the
// last call's, unless it was cancelled. No call runs meanwhile, so a
// cancel of the context reaches no call but the one it was meant for; a
// cancel that comes after its call ended (the watch goroutine cancels
// only the running call) leaves it alone.
func (s *server) callContext() (context.Context, context.CancelFunc) {
	if s.ctx == nil || s.ctx.Err() != nil {
		s.ctx, s.stopCtx = context.WithCancel(context.Background())
	}
	return s.ctx, s.stopCtx
}

// close closes the runtime; no call runs by then (they run on the loop).
func (s *server) close() {
	if s.stopCtx != nil {
		s.stopCtx()
	}
	if c, ok := s.rt.(io.Closer); ok {
		_ = c.Close()
	}
}

// watch reads the parent's cancels from stop until it ends, and stops
// the running call each names (or the call with that id when it starts).
// When stop ends (the parent is gone) or breaks, it stops the running
// call and closes the input, which ends the loop.
func (s *server) watch(stop io.Reader) {
	r := bufio.NewReaderSize(stop, 512)
	for {
		f, err := readFrame(r, 512)
		var m cancelMsg
		if err == nil {
			err = decode(f, frameCancel, &m)
		}
		s.mu.Lock()
		if err != nil {
			s.gone = true
		} else {
			s.cancelled = max(s.cancelled, m.ID)
		}
		if s.cancel != nil && (s.gone || s.running <= s.cancelled) {
			s.cancel()
		}
		s.mu.Unlock()
		if err != nil {
			_ = s.in.Close() // the loop ends too
			return
		}
	}
}

// loop reads the parent's frames and runs each call on this goroutine,
// until in ends (nil) or the protocol breaks. A call starts without a
// switch to another goroutine: a worker's time is mostly the wakeups of
// its round trips, and each switch would add one.
func (s *server) loop() error {
	for {
		s.rmu.Lock()
		f, err := readFrame(s.r, s.max)
		s.rmu.Unlock()
		if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
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
		case frameHostReply, frameParallelReply:
			// The reply to a host call whose wait ended (its context did).
		default:
			return fmt.Errorf("%w: type %d from the parent", errFrame, f.typ)
		}
	}
}

// start decodes a call and runs it; host calls read their replies from
// the input meanwhile.
func (s *server) start(f frame) error {
	var run func(ctx context.Context) resultMsg
	var id uint64
	switch f.typ {
	case frameInvoke:
		var m invokeMsg
		if err := decode(f, frameInvoke, &m); err != nil {
			return err
		}
		if err := s.context(&m); err != nil {
			return err
		}
		id = m.ID
		run = func(ctx context.Context) resultMsg { return s.invoke(ctx, &m) }
	default:
		var m evalMsg
		if err := decode(f, frameEval, &m); err != nil {
			return err
		}
		id = m.ID
		run = func(ctx context.Context) resultMsg { return s.eval(ctx, &m) }
	}
	ctx, cancel := s.callContext()
	s.mu.Lock()
	s.running, s.cancel = callID(id), cancel
	if s.gone || callID(id) <= s.cancelled { // cancelled before it came
		cancel()
	}
	s.mu.Unlock()
	before := cpuTime()
	res := run(ctx)
	res.CPUNs = int64(cpuTime() - before)
	s.mu.Lock()
	s.running, s.cancel = 0, nil
	s.mu.Unlock()
	err := s.send(frameResult, &res)
	if errors.Is(err, errTooLarge) && len(res.Writes) > 0 {
		// Writes a later one undoes (a var set a thousand times) are
		// left out: the board ends as it would.
		res.Writes = writeMsgs(boardWrites(res.Writes).Compact())
		err = s.send(frameResult, &res)
	}
	if err != nil {
		// The parent is gone or the result does not fit: say so
		// instead, or die trying (the parent then sees the exit).
		kind := fault.Internal
		if errors.Is(err, errTooLarge) {
			kind = fault.BudgetExceeded
		}
		res = resultMsg{ID: res.ID, CPUNs: res.CPUNs, Err: encodeError(fault.Wrap(kind, err,
			"send result", "the call's writes are more than a worker's answer may carry"))}
		_ = s.send(frameResult, &res)
	}
	return nil
}

// boardWrites is ws as the sandbox's writes.
func boardWrites(ws []writeMsg) sandbox.Writes {
	out := make(sandbox.Writes, len(ws))
	for i, w := range ws {
		out[i] = sandbox.Write{Op: w.Op, Name: w.Name, Value: w.Value, Messages: w.Messages}
	}
	return out
}

func (s *server) invoke(ctx context.Context, m *invokeMsg) resultMsg {
	inv := sandbox.Invocation{
		Node: m.Node, Type: m.Type, Config: m.Config, Board: m.Board, BoardBytes: m.BoardBytes,
		Script: sandbox.Script{Name: m.Script.Name, Source: m.Script.Source, Module: m.Script.Module,
			Entry: m.Script.Entry, Config: m.Script.Config},
		ABI: &remoteABI{s: s, id: callID(m.ID), functions: m.Functions}, Run: m.Run, Limits: m.Limits,
	}
	if m.Parallel {
		inv.Parallel = func(nodeID, reason string) bool { return s.parallel(callID(m.ID), nodeID, reason) }
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

// roundTrip sends a request frame of the running call and reads its
// reply from the input, on the call's goroutine; replies to earlier
// requests whose wait ended are dropped. The wait ends with ctx: a read
// deadline wakes it while no byte of a frame has come (so that no frame
// is read in part), and the late reply is dropped when it comes.
func (s *server) roundTrip(ctx context.Context, id uint64, t frameType, msg func(seq uint64) any) (frame, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if running != id {
		return frame{}, fault.New(fault.Aborted, "host call", "the call has ended")
	}
	s.seq++
	seq := s.seq
	if err := s.send(t, msg(seq)); err != nil {
		return frame{}, fault.Wrap(fault.Internal, err, "host call", "")
	}
	for {
		if err := s.await(ctx); err != nil {
			return frame{}, err
		}
		f, err := readFrame(s.r, s.max)
		if err != nil {
			return frame{}, fault.Wrap(fault.Internal, err, "host call", "read the reply")
		}
		if f.typ != frameHostReply && f.typ != frameParallelReply {
			return frame{}, fault.Wrap(fault.Internal, fmt.Errorf("%w: type %d while a host call waits", errFrame, f.typ), "host call", "")
		}
		var got struct {
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(f.payload, &got); err != nil {
			return frame{}, fault.Wrap(fault.Internal, fmt.Errorf("%w: %v", errFrame, err), "host call", "")
		}
		if got.Seq == seq {
			return f, nil
		}
	}
}

// await waits until a byte of the input is buffered, or ctx ends: then it
// returns ctx's error and nothing of the input has been read.
func (s *server) await(ctx context.Context) error {
	if s.r.Buffered() > 0 {
		return nil
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = s.in.SetReadDeadline(time.Unix(1, 0))
	})
	_, err := s.r.Peek(1)
	if !stop() { // the deadline is set, or is being set: clear it after
		<-fired
		_ = s.in.SetReadDeadline(time.Time{})
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
		return fault.FromContext(ctx.Err(), "host call")
	}
	return fault.Wrap(fault.Internal, err, "host call", "read the reply")
}

// callID is the id of a running call: the parent's ids start at 1, and
// 0 is "no call".
func callID(id uint64) uint64 { return max(id, 1) }

func (s *server) parallel(id uint64, nodeID, reason string) bool {
	f, err := s.roundTrip(context.Background(), id, frameParallel, func(seq uint64) any {
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
	id        uint64 // the call's
	functions []string
}

func (a *remoteABI) Functions() []string { return a.functions }

func (a *remoteABI) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	f, err := a.s.roundTrip(ctx, a.id, frameHost, func(seq uint64) any { return &hostMsg{Seq: seq, Name: name, Args: args} })
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
