package proc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
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
	var b *budget
	if f.typ == frameResult { // as the parent reads a worker's result
		b = newBudget(sandbox.Limits{MemoryBytes: 1 << 20, MaxValueBytes: 4 << 10}.WithDefaults(), 0)
	}
	if err := decodeIn(f, f.typ, v, b); err != nil {
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
	cfg := map[string]any{"k": []any{1.0, "two", map[string]any{"three": true}}, "nil": nil}
	for name, c := range map[string]struct {
		typ     frameType
		in, out interface{ check() error }
	}{
		"invoke": {frameInvoke, &invokeMsg{ID: 7, Node: "a", Board: *b, Functions: []string{"emit"}, Limits: sandbox.DefaultLimits()}, &invokeMsg{}},
		"invoke, every field": {frameInvoke, &invokeMsg{ID: 1 << 40, Node: "n", Type: "script",
			Script: scriptMsg{Name: "s", Source: "board.setVar('é', 1)", Module: []byte{0, 1, 2}, Entry: "main", Config: cfg},
			Config: cfg, Board: *b, BoardBytes: 123, Functions: []string{}, Parallel: true,
			Run:    sandbox.RunInfo{RunID: "r", TaskID: "t", AgentID: "a", ContextID: "c", ParentRunID: "p", Tenant: "acme"},
			Limits: sandbox.Limits{StackDepth: 9, WallTime: 3}}, &invokeMsg{}},
		"invoke, same context": {frameInvoke, &invokeMsg{ID: 2, Node: "a", Board: *agent.NewBoard(), Same: true}, &invokeMsg{}},
		"eval":                 {frameEval, &evalMsg{ID: 3, Node: "e", Expr: "x > 1", Vars: cfg, Tenant: "acme", Limits: sandbox.Limits{StackDepth: 4}}, &evalMsg{}},
		"result": {frameResult, &resultMsg{ID: 4, CPUNs: 99, Writes: []writeMsg{
			{Op: sandbox.SetVar, Name: "x", Value: cfg}, {Op: sandbox.DeleteVar, Name: "y"},
			{Op: sandbox.SetVar, Name: "empty", Value: ""},
			{Op: sandbox.AppendChannel, Name: "main", Messages: b.Channels["main"]}}}, &resultMsg{}},
		"result of an eval":    {frameResult, &resultMsg{ID: 5, Value: []any{1.0, "x"}}, &resultMsg{}},
		"result with an error": {frameResult, &resultMsg{ID: 6, Err: encodeError(&sandbox.LimitError{Limit: sandbox.LimitMemory, Node: "a", Max: 9})}, &resultMsg{}},
	} {
		f, err := readFrame(bytes.NewReader(frameBytes(t, c.typ, c.in)), DefaultMaxFrameBytes)
		require.NoError(t, err, name)
		require.NoError(t, decode(f, c.typ, c.out), name)
		assert.Equal(t, c.in, c.out, name)
	}

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

// REF 9.M12
// Malformed frames are errors, never panics: unknown types, bad JSON, a
// write of an unknown op, an unknown error kind, negative numbers, a write
// the board API would refuse.
// REF 9.M14 (a worker's writes are checked as the board API checks them)
func TestMalformedFrames(t *testing.T) {
	for name, f := range map[string]frame{
		"bad json":        {frameHost, []byte(`{`)},
		"no name":         {frameHost, []byte(`{"seq":1}`)},
		"negative cap":    {frameStart, []byte(`{"memory_bytes":-1}`)},
		"bad op":          {frameResult, fields(t, &resultMsg{ID: 1, Writes: []writeMsg{{Op: 9, Name: "x"}}})},
		"empty append":    {frameResult, fields(t, &resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.AppendChannel, Name: "x"}}})},
		"bad kind":        {frameResult, fields(t, &resultMsg{ID: 1, Err: &wireError{Kind: "meltdown", Message: "x"}})},
		"negative cpu":    {frameResult, fields(t, &resultMsg{ID: 1, CPUNs: -1})},
		"negative limits": {frameInvoke, fields(t, &invokeMsg{ID: 1, Limits: sandbox.Limits{WallTime: -1}})},
		"no fields":       {frameResult, nil},
		"a field short":   {frameResult, fields(t, &resultMsg{ID: 1})[:2]},
		"a byte over":     {frameResult, append(fields(t, &resultMsg{ID: 1}), 0)},
		"string past the end": {frameInvoke, func() []byte {
			e := enc{}
			e.uint(1)
			e.uint(1 << 30) // the node's length
			return append(e.b, "n"...)
		}()},
		"count past the end": {frameResult, func() []byte {
			e := enc{}
			e.uint(1)
			e.int(0)
			e.uint(1 << 40) // writes
			return e.b
		}()},
		"value not json": {frameResult, func() []byte {
			e := enc{}
			e.uint(1)
			e.int(0)
			e.uint(1)
			e.uint(uint64(sandbox.SetVar))
			e.str("x")
			e.raw([]byte(`{"x":`))
			e.uint(0)
			e.uint(0)
			e.uint(0)
			return e.b
		}()},
		"flag not 0 or 1": {frameInvoke, func() []byte {
			b := fields(t, &invokeMsg{ID: 1, Same: true})
			b[len(b)-1] = 2
			return b
		}()},
		// A worker whose script escaped its runner writes nothing the
		// board API refuses.
		"kernel var":         {frameResult, fields(t, &resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.SetVar, Name: "__iterations", Value: 0.0}}})},
		"kernel var deleted": {frameResult, fields(t, &resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.DeleteVar, Name: "__x"}}})},
		"kernel channel":     {frameResult, fields(t, &resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.SetChannel, Name: "__other", Messages: []message.Message{}}}})},
		"empty var name":     {frameResult, fields(t, &resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.SetVar, Name: "", Value: 1.0}}})},
		"invalid message":    {frameResult, fields(t, &resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.AppendChannel, Name: "c", Messages: []message.Message{{Role: "wizard"}}}}})},
	} {
		assert.ErrorIs(t, decodeAny(f), errFrame, name)
	}
	op := enc{}
	op.uint(1)
	op.int(0)
	op.uint(1)
	op.uint(256 + uint64(sandbox.SetVar)) // an op that a byte cannot hold
	op.str("x")
	op.uint(0)
	op.uint(0)
	op.uint(0)
	op.uint(0)
	assert.ErrorIs(t, decodeAny(frame{frameResult, op.b}), errFrame, "op past a byte")
}

// reencodes checks that a frame of fields that decodes encodes again
// to a frame that decodes to the same message.
func reencodes(t testing.TB, fr frame) {
	var first, second interface {
		binaryMsg
		binaryDecoder
		check() error
	}
	switch fr.typ {
	case frameInvoke:
		first, second = &invokeMsg{}, &invokeMsg{}
	case frameEval:
		first, second = &evalMsg{}, &evalMsg{}
	case frameResult:
		first, second = &resultMsg{}, &resultMsg{}
	default:
		return
	}
	if decode(fr, fr.typ, first) != nil {
		return
	}
	again := fields(t, first)
	require.NoError(t, decode(frame{fr.typ, again}, fr.typ, second))
	require.Equal(t, first, second)
}

// fields is msg as its frame's payload.
func fields(t testing.TB, msg binaryMsg) []byte {
	e := enc{}
	require.NoError(t, msg.appendTo(&e))
	return e.b
}

// REF 9.M12
// FuzzFrame feeds the frame reader and every message decoder arbitrary
// bytes: no panic, and no frame past the bound.
func FuzzFrame(f *testing.F) {
	f.Add(frameBytes(f, frameResult, &resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.SetVar, Name: "x", Value: 1.0}},
		Err: encodeError(&sandbox.LimitError{Limit: "memory_bytes", Node: "n", Max: 1})}))
	f.Add(frameBytes(f, frameHost, &hostMsg{Seq: 1, Name: "emit", Args: []byte(`["a","b"]`)}))
	f.Add(frameBytes(f, frameInvoke, &invokeMsg{ID: 1, Node: "n", Board: *agent.NewBoard()}))
	f.Add(frameBytes(f, frameHostReply, &hostReplyMsg{Seq: 1, Err: encodeError(fault.New(fault.PolicyDenied, "x", "y"))}))
	f.Add(frameBytes(f, frameInvoke, &invokeMsg{ID: 2, Node: "n", Type: "script", Script: scriptMsg{Source: "x", Module: []byte{1}},
		Config: map[string]any{"a": 1.0}, Board: agent.Board{Vars: map[string]any{"v": "s"}}, Functions: []string{"emit", "log"},
		Run: sandbox.RunInfo{RunID: "r", Tenant: "t"}, Limits: sandbox.Limits{StackDepth: 3}}))
	f.Add(frameBytes(f, frameEval, &evalMsg{ID: 3, Expr: "x", Vars: map[string]any{"x": true}}))
	f.Add(frameBytes(f, frameResult, &resultMsg{ID: 4, Value: "v", Writes: []writeMsg{{Op: sandbox.AppendChannel, Name: "c",
		Messages: []message.Message{message.NewTextMessage(message.RoleUser, "hi")}}}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	// Values that cost the parent more than their bytes, and escapes that
	// make a value's text longer than its measure (budget.go).
	f.Add(bloatFrame(f, 4<<10))
	f.Add(resultFrame(f, []byte(`{"a":[{},{"b":[]}],"c":"\u003c\u2028\ud83d\ude00","d":[1e-07,-0,1.5e+21]}`)))
	f.Add(resultFrame(f, []byte(`"`+strings.Repeat(`\u003c`, 4<<10)+`"`)))
	f.Add(frameBytes(f, frameResult, &resultMsg{ID: 5, Value: strings.Repeat("x", 5<<10)}))
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
			reencodes(t, fr)
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

// The values of a call's frames encode as encoding/json encodes them: each
// decodes to what encoding/json's encoding decodes to, strings with
// quotes, backslashes, control characters and any Unicode included; what
// the fast encoding does not take (invalid UTF-8, other types, deep
// nesting) goes through encoding/json, and NaN fails as it does there.
func TestValuesAsJSON(t *testing.T) {
	deep := any("bottom")
	for range maxFastDepth + 5 {
		deep = []any{deep}
	}
	for name, v := range map[string]any{
		"nil":     nil,
		"scalars": []any{true, false, 0.0, -0.0, 1.5, 1e21, 5e-324, -1.7976931348623157e308, 42, int64(-7)},
		"strings": []any{"", `"quoted" \back\slash`, "\x00\x01\x1f\t\n\r", "é ✓ 😀 \u2028\u2029", "<&>"},
		"objects": map[string]any{"a": map[string]any{"b": []any{nil, "c"}}, "": 1.0, "k\"ey\n": "v"},
		"invalid": map[string]any{"s": "bad \xff utf-8", "k\xfe": 1.0},
		"other":   map[string]any{"m": map[string]string{"x": "y"}, "n": json.Number("12"), "u": uint8(3)},
		"deep":    deep,
		"empty":   map[string]any{"o": map[string]any{}, "a": []any{}},
	} {
		e := enc{}
		require.NoError(t, e.json(v), name)
		d := dec{b: e.b}
		var got any
		d.json(&got)
		require.NoError(t, d.end(), name)
		want, err := json.Marshal(v)
		require.NoError(t, err, name)
		var wantV any
		require.NoError(t, json.Unmarshal(want, &wantV), name)
		assert.Equal(t, wantV, got, name)
	}
	e := enc{}
	assert.Error(t, e.json(map[string]any{"x": math.NaN()}), "NaN is not JSON")
}
