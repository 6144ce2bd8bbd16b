package sandbox_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonBytes measures JSON values as encoding/json writes them, without
// encoding them, and the board as the struct it stands for.
func TestJSONBytesMatchesEncoding(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		nil, true, false, 0.0, math.Copysign(0, -1), 1.0, -1.5, 1e21, 1e-7, 123456789.125, 1e300, "", "plain", `quo"te\back`,
		"tab\tnl\ncr\r\x01\b\f", "<a&b>", "é漢😀", "bad\xffutf8", "line\u2028sep\u2029",
		[]any{}, []any{1.0, "two", nil, []any{true}}, map[string]any{}, map[string]any(nil),
		map[string]any{"a": 1.0, "<k>": map[string]any{"n": []any{"x", 2.5}}},
		[]any(nil), json.Number("12.5"), json.RawMessage(` {"a" : "<"} `), 42, int64(-7), []string{"a"},
		map[string]string{"k": "<v>"}, []map[string]any{{"a": nil}}, []byte("bytes"),
		message.NewTextMessage(message.RoleUser, "not native: <encoded>"),
	} {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		assert.Equal(t, int64(len(want)), must(sandbox.JSONBytes(v)), "%#v", v)
	}
	board := agent.NewBoard()
	board.Vars["x"] = map[string]any{"list": []any{1.0, "two"}}
	board.Append(agent.MainChannel, message.NewTextMessage(message.RoleUser, "hello <there>"))
	for _, b := range []*agent.Board{board, agent.NewBoard(), {}} {
		want, err := json.Marshal(struct {
			Vars     map[string]any `json:"vars"`
			Channels any            `json:"channels"`
		}{b.Vars, b.Channels})
		require.NoError(t, err)
		assert.Equal(t, int64(len(want)), must(sandbox.BoardJSONBytes(b)))
	}
}

func must(n int64, err error) int64 {
	if err != nil {
		panic(err)
	}
	return n
}

// FuzzJSONBytes checks the measure of decoded JSON values against
// encoding/json.
func FuzzJSONBytes(f *testing.F) {
	for _, s := range []string{`null`, `{"a":[1,"x",true,null,{"b":1e-7}]}`, `"<\u2028>"`, `[1e21,-0.5]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		want, err := json.Marshal(v)
		if err != nil {
			return
		}
		if got := must(sandbox.JSONBytes(v)); got != int64(len(want)) {
			t.Fatalf("JSONBytes(%s) = %d, want %d", want, got, len(want))
		}
	})
}
