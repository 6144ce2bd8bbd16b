package sandbox_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func setVar(name string, v any) sandbox.Write {
	return sandbox.Write{Op: sandbox.SetVar, Name: name, Value: v}
}

func deleteVar(name string) sandbox.Write { return sandbox.Write{Op: sandbox.DeleteVar, Name: name} }

func setChannel(name string, msgs ...message.Message) sandbox.Write {
	if msgs == nil {
		msgs = []message.Message{}
	}
	return sandbox.Write{Op: sandbox.SetChannel, Name: name, Messages: msgs}
}

func appendChannel(name string, msgs ...message.Message) sandbox.Write {
	return sandbox.Write{Op: sandbox.AppendChannel, Name: name, Messages: msgs}
}

func text(s string) message.Message { return message.NewTextMessage(message.RoleUser, s) }

// checkView fails unless v reads as ref does and counts ref's size
// exactly, for every name of names.
func checkView(t *testing.T, v *sandbox.BoardView, ref *agent.Board, names []string, msgAndArgs ...any) {
	t.Helper()
	want, err := sandbox.BoardJSONBytes(ref)
	require.NoError(t, err)
	got, ok := v.Size()
	require.True(t, ok, msgAndArgs...)
	require.Equal(t, want, got, msgAndArgs...)
	for _, n := range names {
		gv, gok := v.Var(n)
		wv, wok := ref.Vars[n]
		require.Equal(t, wok, gok, msgAndArgs...)
		require.Equal(t, wv, gv, msgAndArgs...)
		require.Equal(t, ref.Channel(n), v.Channel(n), msgAndArgs...)
	}
	if len(ref.Vars) == 0 {
		require.Empty(t, v.Vars(), msgAndArgs...)
	} else {
		require.Equal(t, ref.Vars, v.Vars(), msgAndArgs...)
	}
}

var viewBoards = map[string]func() *agent.Board{
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

// After every write a view reads as the board with the writes applied and
// counts its size exactly — whatever the board started as (nil maps,
// empty maps, a nil channel), whatever the names (escaped in JSON,
// invalid UTF-8) and the values (numbers of every form, nested objects,
// HTML characters) — while the board it was made on is never written; its
// writes, applied and measured as the graph engine does, give the same
// board and the same size.
func TestBoardViewIsExact(t *testing.T) {
	t.Parallel()
	writes := []sandbox.Write{
		setVar("x", 2.0), setVar("x", -0.0), setVar("x", math.Copysign(0, -1)), setVar("y", 1e21),
		setVar("z", 123.456), setVar("big", float64(1<<53)), setVar("s", "a<b&c\"d\\\n\u2028"),
		setVar("<tag>", "replaced"), setVar("\xff", "invalid name"), setVar("obj", map[string]any{"k": []any{1.0, "x"}}),
		setVar("nil", nil), setVar("t", true), deleteVar("x"), deleteVar("absent"), deleteVar("<tag>"),
		appendChannel("chat", text("one"), text("two")), appendChannel("none", text("into nil")),
		appendChannel("empty", text("into empty")), appendChannel("new", text("<new>")), appendChannel("new"),
		setChannel("chat"), setChannel("fresh", text("x")), appendChannel("chat", text("after reset")),
	}
	names := []string{"x", "y", "z", "big", "s", "<tag>", "\xff", "obj", "nil", "t", "absent",
		"chat", "none", "empty", "new", "fresh"}
	for name, board := range viewBoards {
		for _, handed := range []bool{false, true} {
			base, ref := board(), board()
			start := int64(0)
			if handed {
				n, err := sandbox.BoardJSONBytes(base)
				require.NoError(t, err)
				start = n
			}
			var v sandbox.BoardView
			v.Reset(*base, start)
			for _, w := range writes {
				_, ok := v.Write(w, 0)
				require.True(t, ok)
				sandbox.Writes{w}.Apply(ref)
				checkView(t, &v, ref, names, "%s, handed %v: after %s %q", name, handed, w.Op, w.Name)
			}
			for n := range ref.Vars { // down to an empty object
				_, ok := v.Write(deleteVar(n), 0)
				require.True(t, ok)
				delete(ref.Vars, n)
				checkView(t, &v, ref, names, "%s: delete all, %q", name, n)
			}
			assert.Equal(t, board(), base, "%s: the view never writes its board", name)
			size, exact := v.Writes().ApplyMeasured(base, start)
			assert.Equal(t, ref, base, name)
			want, err := sandbox.BoardJSONBytes(ref)
			require.NoError(t, err)
			assert.True(t, exact, name)
			assert.Equal(t, want, size, name)
		}
	}
}

// A write past the bound is refused and leaves no trace: not on the view,
// not in its writes; a write that does not change the board (deleting an
// absent var, appending nothing) is not recorded.
func TestBoardViewBound(t *testing.T) {
	t.Parallel()
	var v sandbox.BoardView
	v.Reset(*agent.NewBoard(), 0)
	after, ok := v.Write(setVar("a", "12345"), 40)
	require.True(t, ok, "size %d", after)
	after, ok = v.Write(setVar("b", "a long value that does not fit"), 40)
	assert.False(t, ok)
	assert.Greater(t, after, int64(40))
	_, had := v.Var("b")
	assert.False(t, had)
	_, ok = v.Write(deleteVar("absent"), 40)
	assert.True(t, ok)
	_, ok = v.Write(appendChannel("c"), 40)
	assert.True(t, ok)
	assert.Equal(t, sandbox.Writes{setVar("a", "12345")}, v.Writes())
	size, _ := v.Size()
	assert.Equal(t, int64(len(`{"vars":{"a":"12345"},"channels":{}}`)), size)
}

// A view started with the caller's measure counts from it without
// measuring again, even a wrong one; started without one it measures at
// its first write.
func TestBoardViewStart(t *testing.T) {
	t.Parallel()
	b := agent.NewBoard()
	b.Vars["x"] = 1.0
	size, err := sandbox.BoardJSONBytes(b)
	require.NoError(t, err)

	var v sandbox.BoardView
	v.Reset(*b, size)
	got, ok := v.Size()
	require.True(t, ok)
	assert.Equal(t, size, got)

	v.Reset(*b, 1000) // a caller's (wrong) measure is taken as it is: the count starts there
	after, _ := v.Write(setVar("y", 2.0), 0)
	assert.Equal(t, int64(1000)+6, after, `"y":2 and a comma`)

	v.Reset(*b, 0)
	_, ok = v.Size()
	assert.False(t, ok)
	after, _ = v.Write(deleteVar("absent"), 0)
	assert.Equal(t, size, after, "measured at the first write")

	n, exact := sandbox.Writes(nil).ApplyMeasured(b, size)
	assert.True(t, exact)
	assert.Equal(t, size, n, "no writes: the size handed in")
	_, exact = sandbox.Writes(nil).ApplyMeasured(b, 0)
	assert.False(t, exact, "no writes and no size: unknown")
}

// A value encoding/json refuses (a Go value another node left) makes the
// count an estimate, which is never reported as exact.
func TestBoardViewEstimate(t *testing.T) {
	t.Parallel()
	b := agent.NewBoard()
	b.Vars["f"] = func() {}
	var v sandbox.BoardView
	v.Reset(*b, 0)
	v.Write(setVar("x", 1.0), 0)
	_, ok := v.Size()
	assert.False(t, ok, "the board does not measure")
	_, exact := sandbox.Writes{setVar("x", 1.0)}.ApplyMeasured(b, 0)
	assert.False(t, exact)

	b = agent.NewBoard()
	b.Vars["f"] = math.Inf(1)
	v.Reset(*b, 100)
	v.Write(setVar("f", 1.0), 0) // the replaced value does not measure
	_, ok = v.Size()
	assert.False(t, ok)
}

// InvokeOn hands the runtime the board's value and makes the writes on
// the board.
func TestInvokeOn(t *testing.T) {
	t.Parallel()
	rt := writer{setVar("a", 1.0), appendChannel("c", text("hi"))}
	b := agent.NewBoard()
	require.NoError(t, sandbox.InvokeOn(t.Context(), rt, sandbox.Invocation{Node: "n"}, b))
	assert.Equal(t, map[string]any{"a": 1.0}, b.Vars)
	assert.Len(t, b.Channel("c"), 1)
	require.Error(t, sandbox.InvokeOn(t.Context(), rt, sandbox.Invocation{Node: "n"}, b), "the board's value is handed in")
	require.NoError(t, sandbox.InvokeOn(t.Context(), rt, sandbox.Invocation{Node: "n"}, nil), "a nil board: an empty one")
}

// FuzzBoardView drives a view through random writes and compares it, after
// each, with a board the writes are applied to.
func FuzzBoardView(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, "a<b", uint8(0))
	f.Add([]byte{3, 3, 4, 0, 1, 9, 9}, "\xff\"", uint8(1))
	f.Add([]byte{8, 2, 5, 5, 6}, "", uint8(2))
	f.Fuzz(func(t *testing.T, script []byte, s string, start uint8) {
		values := []any{nil, true, 0.0, -1.0, 1.5, 1e21, float64(1 << 53), s, map[string]any{s: s}, []any{s, 2.0}}
		names := []string{"a", s, "<", "\u2028", "x"}
		boards := []func() *agent.Board{viewBoards["nil maps"], viewBoards["empty maps"], viewBoards["full"]}
		board := boards[int(start)%len(boards)]
		base, ref := board(), board()
		var v sandbox.BoardView
		v.Reset(*base, 0)
		for i := 0; i+1 < len(script); i += 2 {
			op, arg := script[i]%5, int(script[i+1])
			name := names[arg%len(names)]
			var w sandbox.Write
			switch op {
			case 0:
				w = setVar(name, values[arg%len(values)])
			case 1:
				w = deleteVar(name)
			case 2:
				w = appendChannel(name, text(s))
			case 3:
				w = appendChannel(name)
			default:
				w = setChannel(name, []message.Message{text(name), text(s)}[:arg%3]...)
			}
			v.Write(w, 0)
			sandbox.Writes{w}.Apply(ref)
			checkView(t, &v, ref, names, "after %s %q", w.Op, w.Name)
		}
		size, exact := v.Writes().ApplyMeasured(base, 0)
		require.Equal(t, ref, base)
		if len(v.Writes()) > 0 {
			want, err := sandbox.BoardJSONBytes(ref)
			require.NoError(t, err)
			require.True(t, exact)
			require.Equal(t, want, size)
		}
	})
}

// writer is a runtime whose every call makes the same writes.
type writer sandbox.Writes

func (w writer) Name() string { return "writer" }

func (w writer) Invoke(_ context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	if _, ok := inv.Board.Vars["a"]; ok {
		return sandbox.Outcome{}, fmt.Errorf("the board handed in holds the last call's writes")
	}
	return sandbox.Outcome{Writes: sandbox.Writes(w)}, nil
}

func (w writer) Eval(context.Context, sandbox.Evaluation) (any, error) { return nil, nil }

// Nothing in an Invocation or an Outcome points into the caller's state:
// no field, at any depth of the structs they hold, is a pointer, an
// unsafe pointer or a channel, but for the messages, which are data that
// encode as JSON (their optional parts are pointers); what the runner
// calls back is a function or an interface (the host ABI), which a process
// boundary carries as a round trip.
func TestContractCarriesPlainValues(t *testing.T) {
	t.Parallel()
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		if typ == reflect.TypeFor[message.Message]() {
			return
		}
		switch typ.Kind() {
		case reflect.Pointer, reflect.UnsafePointer, reflect.Chan, reflect.Uintptr:
			t.Errorf("%s is a %s", path, typ.Kind())
		case reflect.Struct:
			for i := range typ.NumField() {
				f := typ.Field(i)
				walk(path+"."+f.Name, f.Type)
			}
		case reflect.Slice, reflect.Array:
			walk(path+"[]", typ.Elem())
		case reflect.Map:
			walk(path+"[key]", typ.Key())
			walk(path+"[]", typ.Elem())
		}
	}
	walk("Invocation", reflect.TypeFor[sandbox.Invocation]())
	walk("Outcome", reflect.TypeFor[sandbox.Outcome]())
}

// Compact leaves out the writes a later one undoes and keeps the rest in
// order; applied, the compacted writes leave the board the writes leave,
// whatever it held before.
func TestWritesCompact(t *testing.T) {
	msg := func(s string) []message.Message {
		return []message.Message{message.NewTextMessage(message.RoleUser, s)}
	}
	set := func(n string, v any) sandbox.Write { return sandbox.Write{Op: sandbox.SetVar, Name: n, Value: v} }
	del := func(n string) sandbox.Write { return sandbox.Write{Op: sandbox.DeleteVar, Name: n} }
	setCh := func(n, s string) sandbox.Write {
		return sandbox.Write{Op: sandbox.SetChannel, Name: n, Messages: msg(s)}
	}
	appCh := func(n, s string) sandbox.Write {
		return sandbox.Write{Op: sandbox.AppendChannel, Name: n, Messages: msg(s)}
	}
	for _, tc := range []struct {
		name     string
		ws, want sandbox.Writes
	}{
		{"empty", nil, sandbox.Writes{}},
		{"overwrites", sandbox.Writes{set("a", 1), set("b", 2), set("a", 3)}, sandbox.Writes{set("b", 2), set("a", 3)}},
		{"set then delete", sandbox.Writes{set("a", 1), del("a")}, sandbox.Writes{del("a")}},
		{"delete then set", sandbox.Writes{del("a"), set("a", 2)}, sandbox.Writes{set("a", 2)}},
		{"appends kept", sandbox.Writes{appCh("c", "1"), appCh("c", "2")}, sandbox.Writes{appCh("c", "1"), appCh("c", "2")}},
		{"set channel undoes what came before", sandbox.Writes{appCh("c", "1"), setCh("c", "2"), appCh("c", "3"), setCh("d", "x"), setCh("c", "4"), appCh("c", "5")},
			sandbox.Writes{setCh("d", "x"), setCh("c", "4"), appCh("c", "5")}},
		{"vars and channels apart", sandbox.Writes{set("c", 1), setCh("c", "m"), set("c", 2)}, sandbox.Writes{setCh("c", "m"), set("c", 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.ws.Compact()
			assert.Equal(t, tc.want, got)
			before := func() *agent.Board {
				b := agent.NewBoard()
				b.Vars["a"], b.Vars["b"], b.Vars["c"] = "old", "old", "old"
				b.Channels["c"] = msg("old")
				return b
			}
			whole, compact := before(), before()
			tc.ws.Apply(whole)
			got.Apply(compact)
			assert.Equal(t, whole, compact)
		})
	}
}
