package proc

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
)

// The wire protocol between a parent and its worker is a stream of frames
// in each direction (docs/sandbox.md, "Process isolation"): a 4-byte
// big-endian length n, then n bytes: one byte of frame type and n-1 bytes
// of payload, JSON or, for the frames of every call, fields (codec.go). No Go value crosses; every frame is size-checked before it is
// read and decoded into a fixed struct whose fields are checked.

// frameType is the first byte of a frame.
type frameType byte

// The frame types. Parent to worker: start, invoke, eval, cancel,
// hostReply, parallelReply. Worker to parent: ready, host, parallel,
// result.
const (
	frameStart frameType = iota + 1
	frameReady
	frameInvoke
	frameEval
	frameCancel
	frameHost
	frameHostReply
	frameParallel
	frameParallelReply
	frameResult
	frameLast = frameResult
)

// DefaultMaxFrameBytes bounds one frame when Options.MaxFrameBytes is
// zero: a board of the default max_board_bytes, written twice over, fits.
const DefaultMaxFrameBytes = 64 << 20

var (
	// errFrame is a malformed frame: the peer is not speaking the protocol.
	errFrame = errors.New("malformed frame")
	// errTooLarge is a message past the frame bound, refused before any
	// byte of it is written.
	errTooLarge = errors.New("message too large")
)

// frame is one decoded frame header and its payload.
type frame struct {
	typ     frameType
	payload []byte
}

// traceFrame, when not nil, sees the type of every frame this process
// reads (out false) or writes (out true): the tests count the round trips
// of a call with it.
var traceFrame atomic.Pointer[func(t frameType, out bool)]

// readFrame reads one frame of at most max bytes from r. It never
// allocates more than the header announces, and refuses a header past max
// before reading the payload.
func readFrame(r io.Reader, max int) (frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 1 || uint64(n) > uint64(max) {
		return frame{}, fmt.Errorf("%w: %d bytes, want 1 to %d", errFrame, n, max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return frame{}, err
	}
	t := frameType(buf[0])
	if t < frameStart || t > frameLast {
		return frame{}, fmt.Errorf("%w: type %d", errFrame, t)
	}
	if tr := traceFrame.Load(); tr != nil {
		(*tr)(t, false)
	}
	return frame{typ: t, payload: buf[1:]}, nil
}

// writeFrame writes msg as a frame of type t to w, refusing one past max.
// The frame is made in w's free buffer, header first, and written with
// one Write (no copy for a message of fields when it fits).
func writeFrame(w *bufio.Writer, t frameType, msg any, max int) error {
	var frame []byte
	if b, ok := msg.(binaryMsg); ok {
		e := enc{b: append(w.AvailableBuffer(), 0, 0, 0, 0, byte(t))}
		if err := b.appendTo(&e); err != nil {
			return err
		}
		frame = e.b
	} else {
		data, err := json.Marshal(msg)
		if err != nil {
			return err
		}
		frame = append(append(w.AvailableBuffer(), 0, 0, 0, 0, byte(t)), data...)
	}
	n := len(frame) - 4 // the type byte and the payload
	if n > max {
		return fmt.Errorf("%w: %d bytes, more than %d", errTooLarge, n, max)
	}
	if tr := traceFrame.Load(); tr != nil {
		(*tr)(t, true)
	}
	binary.BigEndian.PutUint32(frame[:4], uint32(n))
	if _, err := w.Write(frame); err != nil {
		return err
	}
	return w.Flush()
}

// decode unmarshals a frame's payload into v, a pointer to one of the
// message structs below, and checks it.
func decode(f frame, want frameType, v interface{ check() error }) error {
	return decodeIn(f, want, v, nil)
}

// decodeIn is decode holding the values of a frame of fields to b (nil:
// no budget), as the parent reads a worker's result (budget.go).
func decodeIn(f frame, want frameType, v interface{ check() error }, b *budget) error {
	if f.typ != want {
		return fmt.Errorf("%w: got type %d, want %d", errFrame, f.typ, want)
	}
	if bd, ok := v.(binaryDecoder); ok {
		d := dec{b: f.payload, budget: b}
		bd.decodeFrom(&d)
		if err := d.end(); err != nil {
			return fmt.Errorf("%w: %v", errFrame, err)
		}
	} else if err := json.Unmarshal(f.payload, v); err != nil {
		return fmt.Errorf("%w: %v", errFrame, err)
	}
	if err := v.check(); err != nil {
		return fmt.Errorf("%w: %v", errFrame, err)
	}
	return nil
}

// startMsg is the first frame a worker reads: what to build and the
// memory cap it sets on itself before it reads anything a script wrote.
type startMsg struct {
	Settings    json.RawMessage `json:"settings,omitempty"` // the in-process runtime's settings
	MemoryBytes int64           `json:"memory_bytes"`       // the worker's cap; 0: none
	Tenant      string          `json:"tenant"`
}

func (m *startMsg) check() error {
	if m.MemoryBytes < 0 {
		return errors.New("negative memory cap")
	}
	return nil
}

// readyMsg answers start: the worker is built and capped.
type readyMsg struct {
	Pid  int    `json:"pid"`
	Caps string `json:"caps"` // the caps the worker set, for errors and docs
}

func (m *readyMsg) check() error { return nil }

// invokeMsg is one sandbox.Invocation, as plain values.
type invokeMsg struct {
	ID         uint64          `json:"id"`
	Node       string          `json:"node"`
	Type       string          `json:"type"`
	Script     scriptMsg       `json:"script"`
	Config     map[string]any  `json:"config,omitempty"`
	Board      agent.Board     `json:"board"`
	BoardBytes int64           `json:"board_bytes,omitempty"`
	Functions  []string        `json:"functions"`
	Run        sandbox.RunInfo `json:"run"`
	Limits     sandbox.Limits  `json:"limits"`
	Parallel   bool            `json:"parallel,omitempty"` // the caller has a Parallel callback
	// Same says Functions, Run and Limits are left out: they are those of
	// the worker's previous invoke (most calls of a run repeat them, and
	// they are most of what a small call costs to encode and decode).
	Same bool `json:"same,omitempty"`
}

// callContext is the part of an invoke that the calls of one run share.
type callContext struct {
	functions []string
	run       sandbox.RunInfo
	limits    sandbox.Limits
}

// equal reports whether c (nil: none) is the context of functions, run
// and limits.
func (c *callContext) equal(functions []string, run sandbox.RunInfo, limits sandbox.Limits) bool {
	return c != nil && c.run == run && c.limits == limits && slices.Equal(c.functions, functions)
}

type scriptMsg struct {
	Name   string         `json:"name,omitempty"`
	Source string         `json:"source,omitempty"`
	Module []byte         `json:"module,omitempty"`
	Entry  string         `json:"entry,omitempty"`
	Config map[string]any `json:"config,omitempty"`
}

func (m *invokeMsg) check() error {
	if m.Board.Vars == nil {
		m.Board.Vars = map[string]any{}
	}
	if m.Board.Channels == nil {
		m.Board.Channels = map[string][]message.Message{}
	}
	return m.Limits.Validate()
}

// evalMsg is one sandbox.Evaluation.
type evalMsg struct {
	ID     uint64         `json:"id"`
	Node   string         `json:"node"`
	Expr   string         `json:"expr"`
	Vars   map[string]any `json:"vars,omitempty"`
	Limits sandbox.Limits `json:"limits"`
	Tenant string         `json:"tenant,omitempty"`
}

func (m *evalMsg) check() error { return m.Limits.Validate() }

// cancelMsg stops the running call (its context ends).
type cancelMsg struct {
	ID uint64 `json:"id"`
}

func (m *cancelMsg) check() error { return nil }

// hostMsg is a host function call a script makes; the parent runs it on
// the call's real sandbox.ABI and answers with hostReplyMsg.
type hostMsg struct {
	Seq  uint64          `json:"seq"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

func (m *hostMsg) check() error {
	if m.Name == "" {
		return errors.New("host call without a name")
	}
	return nil
}

type hostReplyMsg struct {
	Seq    uint64          `json:"seq"`
	Result json.RawMessage `json:"result,omitempty"`
	Err    *wireError      `json:"err,omitempty"`
}

func (m *hostReplyMsg) check() error { return m.Err.check() }

// parallelMsg is a call of parallel.cancelNode.
type parallelMsg struct {
	Seq    uint64 `json:"seq"`
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

func (m *parallelMsg) check() error { return nil }

type parallelReplyMsg struct {
	Seq uint64 `json:"seq"`
	OK  bool   `json:"ok"`
}

func (m *parallelReplyMsg) check() error { return nil }

// resultMsg ends a call: its writes (Invoke) or value (Eval), its error,
// and the CPU time the worker spent on it (rusage).
type resultMsg struct {
	ID     uint64     `json:"id"`
	Writes []writeMsg `json:"writes,omitempty"`
	Value  any        `json:"value,omitempty"`
	Err    *wireError `json:"err,omitempty"`
	CPUNs  int64      `json:"cpu_ns"`
}

// writeMsg is one sandbox.Write.
type writeMsg struct {
	Op       sandbox.WriteOp   `json:"op"`
	Name     string            `json:"name"`
	Value    any               `json:"value,omitempty"`
	Messages []message.Message `json:"messages,omitempty"`
}

func (m *resultMsg) check() error {
	if m.CPUNs < 0 {
		return errors.New("negative cpu time")
	}
	for _, w := range m.Writes {
		if err := w.check(); err != nil {
			return err
		}
	}
	return m.Err.check()
}

// check refuses a write no runner makes, whatever the worker claims: an
// unknown op, an empty name, a name of the kernel's (a var starting with
// "__", a channel but the main one), an append of nothing, an invalid
// message. A worker whose script escaped its runner could otherwise have
// the parent apply such writes to the board (the runners refuse them in
// the script's board API, which a worker runs on the worker's side).
func (w *writeMsg) check() error {
	switch {
	case w.Op < sandbox.SetVar || w.Op > sandbox.AppendChannel:
		return fmt.Errorf("write op %d", w.Op)
	case w.Name == "":
		return fmt.Errorf("%s without a name", w.Op)
	case w.Op == sandbox.AppendChannel && len(w.Messages) == 0:
		return errors.New("appendChannel without messages")
	}
	kernel := strings.HasPrefix(w.Name, "__")
	if w.Op == sandbox.SetChannel || w.Op == sandbox.AppendChannel {
		kernel = kernel && w.Name != agent.MainChannel
		for i, msg := range w.Messages {
			if err := msg.Validate(); err != nil {
				return fmt.Errorf("%s %q: message %d: %w", w.Op, w.Name, i, err)
			}
		}
	}
	if kernel {
		return fmt.Errorf("%s %q: the name is reserved for the kernel", w.Op, w.Name)
	}
	return nil
}

// writes returns the result's writes as sandbox.Writes.
func (m *resultMsg) writes() sandbox.Writes {
	if len(m.Writes) == 0 {
		return nil
	}
	out := make(sandbox.Writes, len(m.Writes))
	for i, w := range m.Writes {
		out[i] = sandbox.Write{Op: w.Op, Name: w.Name, Value: w.Value, Messages: w.Messages}
	}
	return out
}

// writeMsgs returns ws as they cross the wire.
func writeMsgs(ws sandbox.Writes) []writeMsg {
	if len(ws) == 0 {
		return nil
	}
	out := make([]writeMsg, len(ws))
	for i, w := range ws {
		out[i] = writeMsg{Op: w.Op, Name: w.Name, Value: w.Value, Messages: w.Messages}
	}
	return out
}
