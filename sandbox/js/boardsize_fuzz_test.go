package js_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
)

// goVar is a Go value another node may leave on the board: the board is
// then measured through encoding/json.
type goVar struct {
	A string `json:"a"`
	B []int  `json:"b,omitempty"`
}

// boardScript turns ops into a script of board writes: each pair of bytes
// is one write (its kind and operands).
func boardScript(ops []byte) string {
	names := []string{`"a"`, `"<&>"`, `"\u2028x"`, `"\ud800"`, `"q\"\\"`, `"é"`, `"\u0001"`, `"main"`}
	values := []string{`-0`, `1e21`, `9007199254740993`, `0.1`, `1e-7`, `"\ud800<"`, `{"<": [1, -0, null, "\u2029"]}`,
		`[]`, `{}`, `null`, `true`, `"x".repeat(50)`, `-1.5e300`, `new Date(0)`, `({toJSON() { return "zz" }})`}
	msg := `{role: "user", parts: [{type: "text", text: "<\u2028>"}]}`
	var b strings.Builder
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i], int(ops[i+1])
		name := names[arg%len(names)]
		switch op % 4 {
		case 0:
			fmt.Fprintf(&b, "board.setVar(%s, %s);\n", name, values[int(op/4)%len(values)])
		case 1:
			fmt.Fprintf(&b, "board.deleteVar(%s);\n", name)
		case 2:
			fmt.Fprintf(&b, "board.appendChannel(%s, [%s]);\n", name, strings.Repeat(msg+", ", int(op/4)%3)+msg)
		default:
			fmt.Fprintf(&b, "board.setChannel(%s, [%s]);\n", name, strings.Repeat(msg+", ", int(op/4)%3))
		}
	}
	return b.String()
}

// FuzzBoardWrites runs scripts of board writes on boards of every start
// (empty, holding a Go value and a null channel, holding an empty
// channel), with and without the size handed in, and fails unless the
// board handed in is left as it was and the call's writes, applied as the
// graph engine applies them, count the board's size exactly.
func FuzzBoardWrites(f *testing.F) {
	f.Add([]byte{0, 0, 4, 1, 2, 2, 3, 3, 1, 0}, uint8(0), true)
	f.Add([]byte{8, 1, 12, 2, 6, 5, 1, 1, 1, 2}, uint8(1), false)
	f.Add([]byte{3, 7, 2, 7, 1, 3, 60, 4}, uint8(2), true)
	rt, err := js.New(js.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = rt.Close() })
	f.Fuzz(func(t *testing.T, ops []byte, start uint8, handed bool) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		b := agent.NewBoard()
		switch start % 3 {
		case 1:
			b.Vars["go"] = goVar{A: "<>"}
			b.Channels["nil"] = nil
		case 2:
			b.Vars["i"] = 3
			b.Channels["empty"] = []message.Message{}
		}
		initial, err := sandbox.BoardJSONBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		var before int64
		if handed {
			before = initial
		}
		snapshot := b.Clone()
		src := boardScript(ops)
		out, err := rt.Invoke(context.Background(), sandbox.Invocation{Node: "n", Type: "script",
			Script: sandbox.Script{Name: "writes", Source: src}, Board: *b, BoardBytes: before})
		if !reflect.DeepEqual(snapshot, b) {
			t.Fatalf("the runtime wrote the board it was handed\n%s", src)
		}
		if err != nil && len(out.Writes) == 0 {
			return // the first write was refused
		}
		got, exact := out.Writes.ApplyMeasured(b, initial)
		want, merr := sandbox.BoardJSONBytes(b)
		if merr != nil {
			t.Fatal(merr)
		}
		if !exact || got != want {
			t.Fatalf("counted %d (exact %v), measured %d (start %d, handed %v)\n%s", got, exact, want, start%3, handed, src)
		}
	})
}
