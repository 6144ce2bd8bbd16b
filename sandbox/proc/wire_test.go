package proc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeAny decodes a frame into the message its type names, as the
// parent and the worker do.
func decodeAny(f frame) error {
	var v interface{ check() error }
	switch f.typ {
	case frameStart:
		v = &startMsg{}
	case frameReady:
		v = &readyMsg{}
	case frameInvoke:
		v = &invokeMsg{}
	case frameEval:
		v = &evalMsg{}
	case frameCancel:
		v = &cancelMsg{}
	case frameHost:
		v = &hostMsg{}
	case frameHostReply:
		v = &hostReplyMsg{}
	case frameParallel:
		v = &parallelMsg{}
	case frameParallelReply:
		v = &parallelReplyMsg{}
	case frameResult:
		v = &resultMsg{}
	}
	if err := decode(f, f.typ, v); err != nil {
		return err
	}
	if r, ok := v.(*resultMsg); ok {
		_ = r.writes()
		_ = decodeError(r.Err)
	}
	if r, ok := v.(*hostReplyMsg); ok {
		_ = decodeError(r.Err)
	}
	return nil
}

func frameBytes(t testing.TB, typ frameType, msg any) []byte {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	require.NoError(t, writeFrame(w, typ, msg, DefaultMaxFrameBytes))
	return buf.Bytes()
}

// Every message crosses and comes back equal; the typed errors keep their
// type, kind and text, and a context's error stays in the chain.
func TestRoundTrip(t *testing.T) {
	b := agent.NewBoard()
	b.Vars["n"] = 1.5
	b.Channels["main"] = []message.Message{message.NewTextMessage(message.RoleUser, "hi")}
	in := &invokeMsg{ID: 7, Node: "a", Board: *b, Functions: []string{"emit"}, Limits: sandbox.DefaultLimits()}
	f, err := readFrame(bytes.NewReader(frameBytes(t, frameInvoke, in)), DefaultMaxFrameBytes)
	require.NoError(t, err)
	var out invokeMsg
	require.NoError(t, decode(f, frameInvoke, &out))
	assert.Equal(t, *in, out)

	for _, err := range []error{
		&sandbox.LimitError{Limit: sandbox.LimitMemory, Node: "a", Max: 9},
		&sandbox.ScriptError{Node: "a", Kind: fault.NotFound, Message: "gone", Detail: []byte(`{"x":1}`), Where: "a:1:2"},
		&agent.InterruptedError{Interrupt: agent.Interrupt{Cause: agent.CauseUserInput, Detail: "wait"}},
		fault.New(fault.PolicyDenied, "host publish", "not granted"),
		fault.FromContext(context.Canceled, "invoke"),
	} {
		back := decodeError(encodeError(err))
		assert.Equal(t, err.Error(), back.Error())
		assert.Equal(t, fault.KindOf(err), fault.KindOf(back))
		assert.Equal(t, errors.Is(err, context.Canceled), errors.Is(back, context.Canceled))
	}
	var le *sandbox.LimitError
	wrapped := fault.Wrap(fault.BudgetExceeded, &sandbox.LimitError{Limit: "max_events", Node: "a", Max: 1}, "host emit", "")
	require.True(t, errors.As(decodeError(encodeError(wrapped)), &le))
	assert.Equal(t, "max_events", le.Limit)
}

// A frame header past the bound is refused before its payload is read:
// the reader never allocates what a peer announces.
func TestFrameBound(t *testing.T) {
	var hdr [5]byte
	binary.BigEndian.PutUint32(hdr[:4], 1<<31)
	_, err := readFrame(bytes.NewReader(hdr[:]), 1<<20)
	assert.ErrorIs(t, err, errFrame)
	binary.BigEndian.PutUint32(hdr[:4], 0)
	_, err = readFrame(bytes.NewReader(hdr[:]), 1<<20)
	assert.ErrorIs(t, err, errFrame)
	_, err = readFrame(bytes.NewReader([]byte{0, 0, 0, 9, byte(frameHost)}), 1<<20)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	var buf bytes.Buffer
	err = writeFrame(bufio.NewWriter(&buf), frameHost, &hostMsg{Name: "x", Args: []byte(`["` + string(bytes.Repeat([]byte("a"), 100)) + `"]`)}, 64)
	assert.ErrorIs(t, err, errTooLarge)
	assert.Zero(t, buf.Len(), "nothing of a refused frame is written")
}

// Malformed frames are errors, never panics: unknown types, bad JSON, a
// write of an unknown op, an unknown error kind, negative numbers, a write
// the board API would refuse.
// REF 9.M13 (a worker's writes are checked as the board API checks them)
func TestMalformedFrames(t *testing.T) {
	for name, f := range map[string]frame{
		"bad json":        {frameHost, []byte(`{`)},
		"no name":         {frameHost, []byte(`{"seq":1}`)},
		"bad op":          {frameResult, []byte(`{"id":1,"writes":[{"op":9,"name":"x"}]}`)},
		"empty append":    {frameResult, []byte(`{"id":1,"writes":[{"op":4,"name":"x"}]}`)},
		"bad kind":        {frameResult, []byte(`{"id":1,"err":{"kind":"meltdown","message":"x"}}`)},
		"negative cpu":    {frameResult, []byte(`{"id":1,"cpu_ns":-1}`)},
		"negative limits": {frameInvoke, []byte(`{"id":1,"limits":{"wall_time":-1}}`)},
		"negative cap":    {frameStart, []byte(`{"memory_bytes":-1}`)},
		// A worker whose script escaped its runner writes nothing the
		// board API refuses.
		"kernel var":         {frameResult, []byte(`{"id":1,"writes":[{"op":1,"name":"__iterations","value":0}]}`)},
		"kernel var deleted": {frameResult, []byte(`{"id":1,"writes":[{"op":2,"name":"__x"}]}`)},
		"kernel channel":     {frameResult, []byte(`{"id":1,"writes":[{"op":3,"name":"__other","messages":[]}]}`)},
		"empty var name":     {frameResult, []byte(`{"id":1,"writes":[{"op":1,"name":"","value":1}]}`)},
		"invalid message":    {frameResult, []byte(`{"id":1,"writes":[{"op":4,"name":"c","messages":[{"role":"wizard"}]}]}`)},
	} {
		assert.ErrorIs(t, decodeAny(f), errFrame, name)
	}
}

// FuzzFrame feeds the frame reader and every message decoder arbitrary
// bytes: no panic, and no frame past the bound.
func FuzzFrame(f *testing.F) {
	f.Add(frameBytes(f, frameResult, &resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.SetVar, Name: "x", Value: 1.0}},
		Err: encodeError(&sandbox.LimitError{Limit: "memory_bytes", Node: "n", Max: 1})}))
	f.Add(frameBytes(f, frameHost, &hostMsg{Seq: 1, Name: "emit", Args: []byte(`["a","b"]`)}))
	f.Add(frameBytes(f, frameInvoke, &invokeMsg{ID: 1, Node: "n", Board: *agent.NewBoard()}))
	f.Add(frameBytes(f, frameHostReply, &hostReplyMsg{Seq: 1, Err: encodeError(fault.New(fault.PolicyDenied, "x", "y"))}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		const bound = 1 << 16
		r := bytes.NewReader(data)
		for {
			fr, err := readFrame(r, bound)
			if err != nil {
				return
			}
			if len(fr.payload)+1 > bound {
				t.Fatalf("frame of %d bytes past the bound", len(fr.payload)+1)
			}
			_ = decodeAny(fr)
		}
	})
}

// A worker's stderr tells a memory death from another: the Go runtime's
// out-of-memory throws, a refused thread, the race detector's refused
// shadow, and a C-level abort with no Go fatal error before it are the
// cap; a Go fatal error, a panic or a Go-raised abort are not.
func TestStderrWatch(t *testing.T) {
	for text, oom := range map[string]bool{
		"fatal error: runtime: out of memory\n\ngoroutine 1 [running]:\n":                          true,
		"runtime: out of memory: cannot allocate 4194304-byte block\nfatal error: out of memory\n": true,
		"runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\n":   true,
		"==1==ERROR: ThreadSanitizer failed to allocate 0x1ff000 (2093056) bytes (errno: 12)\n":    true,
		"fatal error: pageAlloc: out of memory\n\nruntime stack:\n":                                true,
		"fatal error: out of memory allocating heap arena map\n":                                   true,
		"SIGABRT: abort\nPC=0x7f0 m=3 sigcode=18446744073709551610\n":                              true,
		"fatal error: sync: unlock of unlocked mutex\n\ngoroutine 1\n":                             false,
		"panic: boom\n\ngoroutine 1 [running]:\n":                                                  false,
		"fatal error: all goroutines are asleep\nSIGABRT: abort\n":                                 false,
		"runtime: goroutine stack exceeds 16777216-byte limit\nfatal error: stack overflow\n":      false,
	} {
		var w stderrWatch
		for chunk := range slices.Chunk([]byte(text), 7) { // lines arrive in pieces
			_, _ = w.Write(chunk)
		}
		assert.Equal(t, oom, w.oom(), text)
		assert.NotEmpty(t, w.cause(), text)
	}
}

// An invoke that says it repeats the previous invoke's context is refused
// by a worker that has none, or when it carries a context after all: the
// parent is not speaking the protocol.
func TestSameContextNeedsOne(t *testing.T) {
	s := &server{}
	err := s.context(&invokeMsg{Same: true})
	assert.ErrorIs(t, err, errFrame, "no previous context")
	first := &invokeMsg{Functions: []string{"emit"}, Run: sandbox.RunInfo{RunID: "r1"}, Limits: sandbox.Limits{StackDepth: 9}}
	require.NoError(t, s.context(first))
	again := &invokeMsg{Same: true}
	require.NoError(t, s.context(again))
	assert.Equal(t, []string{"emit"}, again.Functions)
	assert.Equal(t, "r1", again.Run.RunID)
	assert.Equal(t, 9, again.Limits.StackDepth)
	err = s.context(&invokeMsg{Same: true, Run: sandbox.RunInfo{RunID: "r2"}})
	assert.ErrorIs(t, err, errFrame, "a context beside same")
}
