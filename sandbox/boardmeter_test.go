package sandbox_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// meterOp is one board write made through a BoardMeter, as a runner makes
// it: the size first, then the write, then Commit.
type meterOp struct {
	name string
	do   func(m *sandbox.BoardMeter, b *agent.Board)
}

func setVar(name string, v any) meterOp {
	return meterOp{fmt.Sprintf("setVar %q", name), func(m *sandbox.BoardMeter, b *agent.Board) {
		after := m.SetVar(b, name, v)
		if b.Vars == nil {
			b.Vars = map[string]any{}
		}
		b.Vars[name] = v
		m.Commit(after)
	}}
}

func deleteVar(name string) meterOp {
	return meterOp{fmt.Sprintf("deleteVar %q", name), func(m *sandbox.BoardMeter, b *agent.Board) {
		m.Commit(m.DeleteVar(b, name))
		delete(b.Vars, name)
	}}
}

func setChannel(name string, msgs []message.Message) meterOp {
	return meterOp{fmt.Sprintf("setChannel %q", name), func(m *sandbox.BoardMeter, b *agent.Board) {
		after := m.SetChannel(b, name, msgs)
		if b.Channels == nil {
			b.Channels = map[string][]message.Message{}
		}
		b.Channels[name] = msgs
		m.Commit(after)
	}}
}

func appendChannel(name string, msgs ...message.Message) meterOp {
	return meterOp{fmt.Sprintf("appendChannel %q", name), func(m *sandbox.BoardMeter, b *agent.Board) {
		after := m.AppendChannel(b, name, msgs)
		if len(msgs) > 0 { // as the runners do: agent.Board.Append of nothing still adds the channel
			b.Append(name, msgs...)
		}
		m.Commit(after)
	}}
}

func text(s string) message.Message { return message.NewTextMessage(message.RoleUser, s) }

// requireMeterExact fails unless the meter holds b's size as
// BoardJSONBytes measures it.
func requireMeterExact(t *testing.T, m *sandbox.BoardMeter, b *agent.Board, msgAndArgs ...any) {
	t.Helper()
	want, err := sandbox.BoardJSONBytes(b)
	require.NoError(t, err)
	got, ok := m.Exact()
	require.True(t, ok, msgAndArgs...)
	require.Equal(t, want, got, msgAndArgs...)
}

// After every write the meter holds exactly the size BoardJSONBytes
// measures — whatever the board started as (nil maps, empty maps, a nil
// channel), whatever the names (escaped in JSON, invalid UTF-8) and the
// values (numbers of every form, nested objects, HTML characters).
func TestBoardMeterIsExact(t *testing.T) {
	t.Parallel()
	boards := map[string]func() *agent.Board{
		"nil maps":   func() *agent.Board { return &agent.Board{} },
		"empty maps": agent.NewBoard,
		"full": func() *agent.Board {
			b := agent.NewBoard()
			b.Vars["x"], b.Vars["<tag>"] = 1.0, map[string]any{"a": []any{"b", nil, true}}
			b.Channels["chat"] = []message.Message{text("hi")}
			b.Channels["none"] = nil
			b.Channels["empty"] = []message.Message{}
			return b
		},
	}
	ops := []meterOp{
		setVar("x", 2.0), setVar("x", -0.0), setVar("x", math.Copysign(0, -1)), setVar("y", 1e21),
		setVar("z", 123.456), setVar("big", float64(1<<53)), setVar("s", "a<b&c\"d\\\n\u2028"),
		setVar("<tag>", "replaced"), setVar("\xff", "invalid name"), setVar("obj", map[string]any{"k": []any{1.0, "x"}}),
		setVar("nil", nil), setVar("t", true), deleteVar("x"), deleteVar("absent"), deleteVar("<tag>"),
		appendChannel("chat", text("one"), text("two")), appendChannel("none", text("into nil")),
		appendChannel("empty", text("into empty")), appendChannel("new", text("<new>")), appendChannel("new"),
		setChannel("chat", []message.Message{}), setChannel("fresh", []message.Message{text("x")}),
		appendChannel("chat", text("after reset")),
	}
	for name, board := range boards {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := board()
			var m sandbox.BoardMeter
			m.Reset(0)
			_, ok := m.Exact()
			require.False(t, ok, "nothing measured yet")
			for _, op := range ops {
				op.do(&m, b)
				requireMeterExact(t, &m, b, op.name)
			}
			for name := range b.Vars { // down to an empty object
				deleteVar(name).do(&m, b)
				requireMeterExact(t, &m, b, "delete all, %q", name)
			}
		})
	}
}

// A call started with the caller's measure counts from it without
// measuring again, and reports it when nothing was written; a call started
// without one reports nothing until it measured.
func TestBoardMeterStart(t *testing.T) {
	t.Parallel()
	b := agent.NewBoard()
	b.Vars["x"] = 1.0
	size, err := sandbox.BoardJSONBytes(b)
	require.NoError(t, err)

	var m sandbox.BoardMeter
	m.Reset(size)
	got, ok := m.Exact()
	require.True(t, ok)
	assert.Equal(t, size, got)

	m.Reset(1000) // a caller's (wrong) measure is taken as it is: the count starts there
	assert.Equal(t, int64(1000)+6, m.SetVar(b, "y", 2.0), `"y":2 and a comma`)

	m.Reset(0)
	_, ok = m.Exact()
	assert.False(t, ok)
	assert.Equal(t, size, m.DeleteVar(b, "absent"), "measured at the first write")
	got, ok = m.Exact()
	require.True(t, ok)
	assert.Equal(t, size, got)
}

// A value encoding/json refuses (a Go value another node left) leaves the
// meter an estimate, which it never reports as exact.
func TestBoardMeterEstimate(t *testing.T) {
	t.Parallel()
	b := agent.NewBoard()
	b.Vars["f"] = func() {}
	var m sandbox.BoardMeter
	m.Reset(0)
	m.Commit(m.SetVar(b, "x", 1.0))
	_, ok := m.Exact()
	assert.False(t, ok, "the board does not measure")

	b = agent.NewBoard()
	m.Reset(100)
	b.Vars["f"] = math.Inf(1)
	m.Commit(m.SetVar(b, "f", 1.0)) // the replaced value does not measure
	_, ok = m.Exact()
	assert.False(t, ok)
}

// FuzzBoardMeter drives a board through random writes and compares the
// meter with BoardJSONBytes after each.
func FuzzBoardMeter(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, "a<b")
	f.Add([]byte{3, 3, 4, 0, 1, 9, 9}, "\xff\"")
	f.Add([]byte{8, 2, 5, 5, 6}, "")
	f.Fuzz(func(t *testing.T, script []byte, s string) {
		values := []any{nil, true, 0.0, -1.0, 1.5, 1e21, float64(1 << 53), s, map[string]any{s: s}, []any{s, 2.0}}
		names := []string{"a", s, "<", "\u2028"}
		b := &agent.Board{}
		if len(script) > 0 && script[0]%2 == 0 {
			b = agent.NewBoard()
		}
		var m sandbox.BoardMeter
		m.Reset(0)
		for i := 0; i+1 < len(script); i += 2 {
			op, arg := script[i]%5, int(script[i+1])
			name := names[arg%len(names)]
			var o meterOp
			switch op {
			case 0:
				o = setVar(name, values[arg%len(values)])
			case 1:
				o = deleteVar(name)
			case 2:
				o = appendChannel(name, text(s))
			case 3:
				o = appendChannel(name)
			default:
				o = setChannel(name, []message.Message{text(name), text(s)}[:arg%3])
			}
			o.do(&m, b)
			want, err := sandbox.BoardJSONBytes(b)
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := m.Exact(); !ok || got != want {
				t.Fatalf("after %s: meter %d (exact %v), board %d", o.name, got, ok, want)
			}
		}
	})
}

// declared is a runtime that declares exact board sizes for itself.
type declared struct {
	sandbox.Runtime
	sandbox.ExactBoardBytes
}

// uncomparable declares exact sizes as a value of a type that does not
// compare (it holds a map).
type uncomparable struct {
	sandbox.ExactBoardBytes
	sandbox.Runtime
	m map[string]int
}

// Only a runtime whose declaration was made for itself, a non-nil
// pointer, declares exact sizes: not one that embeds a declared runtime,
// by pointer or by interface, nor a zero declaration, nor a value; a nil
// pointer, one embedded, and a value of a type that does not compare are
// refused without a panic.
func TestReportsExactBoardBytes(t *testing.T) {
	t.Parallel()
	d := &declared{}
	assert.False(t, sandbox.ReportsExactBoardBytes(d), "a zero declaration")
	d.ExactBoardBytes = sandbox.DeclareExactBoardBytes(d)
	assert.True(t, sandbox.ReportsExactBoardBytes(d))
	assert.False(t, sandbox.ReportsExactBoardBytes(struct{ *declared }{d}), "embedding the declared type")
	assert.False(t, sandbox.ReportsExactBoardBytes(&struct{ *declared }{d}), "embedding it, by pointer")
	assert.False(t, sandbox.ReportsExactBoardBytes(struct{ sandbox.Runtime }{d}), "embedding the interface")
	assert.False(t, sandbox.ReportsExactBoardBytes(nil))
	for name, rt := range map[string]sandbox.Runtime{
		"nil pointer":          (*declared)(nil),
		"embedded nil":         struct{ *declared }{},
		"embedded nil, by ptr": &struct{ *declared }{},
	} {
		assert.NotPanics(t, func() { assert.False(t, sandbox.ReportsExactBoardBytes(rt), name) }, name)
	}
	u := uncomparable{m: map[string]int{}}
	u.ExactBoardBytes = sandbox.DeclareExactBoardBytes(u)
	assert.NotPanics(t, func() { assert.False(t, sandbox.ReportsExactBoardBytes(u)) })
	f := uncomparable{Runtime: struct {
		sandbox.Runtime
		f func()
	}{}}
	f.ExactBoardBytes = sandbox.DeclareExactBoardBytes(f)
	assert.NotPanics(t, func() { assert.False(t, sandbox.ReportsExactBoardBytes(f)) }, "a value holding an uncomparable value")
}
