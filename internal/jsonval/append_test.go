package jsonval_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/internal/jsonval"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nativeCases are values Append writes itself; each must come out as
// json.Marshal writes it.
var nativeCases = []struct {
	name string
	v    any
}{
	{"nil", nil},
	{"true", true},
	{"false", false},
	{"zero", 0.0},
	{"negative zero", math.Copysign(0, -1)},
	{"integral float", 42.0},
	{"fraction", -1.5},
	{"shortest round trip", 0.1 + 0.2},
	{"large integral below 1e21", 1e20},
	{"1e21 switches to exponent", 1e21},
	{"huge", 1.7976931348623157e308},
	{"1e-6 stays fixed", 1e-6},
	{"below 1e-6 switches to exponent", 9.99e-7},
	{"one-digit negative exponent", 1e-7},
	{"two-digit negative exponent", 1e-10},
	{"three-digit negative exponent", 5e-324},
	{"negative tiny", -2.5e-9},
	{"float32", float32(3.14)},
	{"float32 tiny", float32(1e-7)},
	{"float32 huge", float32(1e21)},
	{"float32 cutoff", float32(9.999999e-7)},
	{"float32 integer beyond its precision", float32(123456789)},
	{"float32 integer", float32(-16777216)},
	{"integral float below 2^53", 9007199254740991.0},
	{"integral float at 2^53", 9007199254740992.0},
	{"integral float beyond 2^53", 123456789012345678.0},
	{"float64s with integers", []float64{3, -4, 1 << 60}},
	{"int", 7},
	{"int min", math.MinInt64},
	{"int64", int64(-1234567890123)},
	{"int8", int8(-128)},
	{"int16", int16(300)},
	{"int32", int32(-70000)},
	{"uint", uint(9)},
	{"uint8", uint8(255)},
	{"uint16", uint16(65535)},
	{"uint32", uint32(1 << 31)},
	{"uint64 max", uint64(math.MaxUint64)},
	{"empty string", ""},
	{"plain string", "hello world"},
	{"quote and backslash", `say "hi" \ bye`},
	{"short escapes", "\b\f\n\r\t"},
	{"other control characters", "\x00\x01\x1f\x7f"},
	{"html characters", "<script>a && b</script>"},
	{"line and paragraph separators", "a\u2028b\u2029c"},
	{"multibyte", "é漢😀"},
	{"invalid utf-8", "bad\xff\xfeutf8\xc3"},
	{"truncated multibyte", "\xe2\x80"},
	{"surrogate half", "\xed\xa0\x80"},
	{"json.Number", json.Number("-12.5e+3")},
	{"empty json.Number", json.Number("")},
	{"raw nil", json.RawMessage(nil)},
	{"raw compacted", json.RawMessage(" { \"a\" : [ 1 , 2 ] ,\n\t\"b\" : \"x y\" } ")},
	{"raw html escaped", json.RawMessage(`{"<k>":"a&b","s":"\u2028` + "\u2028\u2029" + `"}`)},
	{"raw escaped quote", json.RawMessage(`["a\"<", "\\", "\\\"&"]`)},
	{"raw invalid utf-8 kept", json.RawMessage("\"\xff\"")},
	{"raw number", json.RawMessage(`  -0.5e3 `)},
	{"bytes", []byte("hello, world")},
	{"nil bytes", []byte(nil)},
	{"empty bytes", []byte{}},
	{"empty slice", []any{}},
	{"nil slice", []any(nil)},
	{"nested slice", []any{1.0, "two", nil, []any{true, map[string]any{}}}},
	{"empty map", map[string]any{}},
	{"nil map", map[string]any(nil)},
	{"sorted and escaped keys", map[string]any{"b": 1.0, "a": 2.0, "<k>": 3.0, "A": 4.0, "é": 5.0, "": 6.0, "a\xff": 7.0}},
	{"nested map", map[string]any{"a": map[string]any{"n": []any{"x", 2.5, map[string]any(nil)}}}},
	{"map of more than sixteen keys", manyKeys(40)},
	{"string map", map[string]string{"z": "<1>", "a": "\u2028"}},
	{"string map of one entry", map[string]string{"<k>\"\xff": "\u2029&"}},
	{"empty string map", map[string]string{}},
	{"string map of many entries", map[string]string{"q": "1", "b": "2", "<": "3", "": "4", "é": "5", "a": "6",
		"k1": "", "k0": "", "z": "", "y": "", "x": "", "w": "", "v": "", "u": "", "t": "", "s": "", "r": "", "p": ""}},
	{"map of one entry", map[string]any{"\u2028<k>": map[string]any{"\x00": []any{map[string]any{"": nil}}}}},
	{"nil string map", map[string]string(nil)},
	{"strings", []string{"a", "<b>", ""}},
	{"nil strings", []string(nil)},
	{"maps", []map[string]any{{"a": 1.0}, nil, {}}},
	{"nil maps", []map[string]any(nil)},
	{"ints", []int{1, -2, 3}},
	{"int64s", []int64{math.MaxInt64}},
	{"float64s", []float64{1e21, -0.0, 1e-7}},
	{"bools", []bool{true, false}},
	{"everything", map[string]any{
		"raw": json.RawMessage(`{"x" : 1}`), "num": json.Number("3"), "ints": []int{1}, "bytes": []byte{0, 255},
		"list": []any{[]string{"a"}, map[string]string{"k": "v"}, int64(5), float32(0.5)},
	}},
}

func manyKeys(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[strings.Repeat("k", i%7)+string(rune('a'+i%26))+string(rune('0'+i/26))] = float64(i)
	}
	return m
}

func TestAppendMatchesMarshal(t *testing.T) {
	t.Parallel()
	for _, tc := range nativeCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(tc.v)
			require.NoError(t, err)
			got, ok := jsonval.Append([]byte("prefix:"), tc.v)
			require.True(t, ok)
			assert.True(t, bytes.Equal(append([]byte("prefix:"), want...), got), "got  %s\nwant %s", got, want)
			size, ok := jsonval.Size(tc.v)
			require.True(t, ok)
			assert.Equal(t, int64(len(want)), size)
			got, ok = jsonval.AppendUpTo(nil, tc.v, len(want))
			assert.True(t, ok)
			assert.Equal(t, string(want), string(got))
			got, ok = jsonval.AppendUpTo([]byte("keep"), tc.v, len(want)+3)
			assert.False(t, ok, "one byte over the limit")
			assert.Equal(t, "keep", string(got))
		})
	}
}

type point struct{ X int }

// TestAppendReportsFalse: outside the set, or where json.Marshal fails,
// Append and Size report false and leave dst as it was.
func TestAppendReportsFalse(t *testing.T) {
	t.Parallel()
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	deep := any("leaf")
	for range jsonval.MaxDepth + 1 {
		deep = []any{deep}
	}
	for name, v := range map[string]any{
		"NaN":                   math.NaN(),
		"+Inf":                  math.Inf(1),
		"-Inf in a slice":       []any{1.0, math.Inf(-1)},
		"float32 NaN":           float32(math.NaN()),
		"NaN in float64s":       []float64{math.NaN()},
		"invalid json.Number":   json.Number("1.e5"),
		"json.Number with sign": json.Number("+1"),
		"empty raw":             json.RawMessage{},
		"invalid raw":           json.RawMessage(`{"a":}`),
		"raw with two values":   json.RawMessage(`1 2`),
		"raw control character": json.RawMessage("\"\x01\""),
		"struct":                point{1},
		"pointer":               &point{1},
		"time":                  time.Unix(0, 0),
		"named string":          json.Delim('x'),
		"map of ints":           map[string]int{"a": 1},
		"struct in a map":       map[string]any{"a": []any{point{}}},
		"cycle":                 cyclic,
		"too deep":              deep,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := jsonval.Append([]byte("keep"), v)
			assert.False(t, ok)
			assert.Equal(t, "keep", string(got))
			_, ok = jsonval.Size(v)
			assert.False(t, ok)
		})
	}
}

func TestAppendRawMatchesMarshal(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`null`, ` [ ] `, `{"a&b" : "<\u2028>"}`, "\"\u2029\"", `"\\u2028"`, `1e5`} {
		want, err := json.Marshal(json.RawMessage(raw))
		require.NoError(t, err)
		got, ok := jsonval.AppendRaw(nil, []byte(raw))
		require.True(t, ok, raw)
		assert.Equal(t, string(want), string(got))
	}
	_, ok := jsonval.AppendRaw(nil, []byte(`{`))
	assert.False(t, ok)
}

func TestSortedKeys(t *testing.T) {
	t.Parallel()
	var buf [2]string
	assert.Equal(t, []string{"", "A", "a", "b", "é"}, jsonval.SortedKeys(buf[:0], map[string]int{"b": 1, "a": 1, "A": 1, "é": 1, "": 1}))
}

// Append and Size agree at the depth limit, and what they write there is
// json.Marshal's.
func TestDepthLimit(t *testing.T) {
	t.Parallel()
	for _, leaf := range []struct {
		v     any
		depth int // of its deepest value
	}{{"leaf", 0}, {1.5, 0}, {[]any{1.5}, 1}, {[]any{"leaf"}, 1}, {[]any{}, 0}, {map[string]any{}, 0}, {[]map[string]any{{}}, 1}} {
		for n := jsonval.MaxDepth/2 - 2; n <= jsonval.MaxDepth/2+1; n++ {
			v := leaf.v
			for range n {
				v = map[string]any{"k": []any{v}} // two levels
			}
			got, ok := jsonval.Append(nil, v)
			size, sized := jsonval.Size(v)
			require.Equal(t, ok, sized, "depth %d", n)
			assert.Equal(t, 2*n+leaf.depth <= jsonval.MaxDepth, ok, "%d levels around %#v", 2*n, leaf.v)
			if ok {
				want, err := json.Marshal(v)
				require.NoError(t, err)
				assert.Equal(t, string(want), string(got))
				assert.Equal(t, int64(len(want)), size)
			}
		}
	}
}

// Each ASCII byte is escaped or not as json.Marshal does it.
func TestASCIIEscapes(t *testing.T) {
	t.Parallel()
	for b := range 0x80 {
		s := string(rune(b))
		want, err := json.Marshal(s)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(jsonval.AppendString(nil, s)), "byte %#x", b)
		assert.Equal(t, "x"+string(want), string(jsonval.AppendString(append(make([]byte, 0, 64), 'x'), s)),
			"byte %#x into spare capacity", b)
	}
}

// Every byte that needs care is found wherever it stands in a string, in
// or out of the eight-byte blocks strings are scanned in.
func TestEscapesAtEveryPosition(t *testing.T) {
	t.Parallel()
	for _, special := range []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", "\n", "\x7f", "é", "\xff", "\u2028", "\u2029", " ", "~"} {
		for n := range 20 {
			for at := range n + 1 {
				s := strings.Repeat("a", at) + special + strings.Repeat("b", n-at)
				want, err := json.Marshal(s)
				require.NoError(t, err)
				got, ok := jsonval.Append(nil, s)
				require.True(t, ok)
				require.Equal(t, string(want), string(got), "%q", s)
				got = jsonval.AppendString(make([]byte, 0, len(s)+2), s) // short strings take a byte loop
				require.Equal(t, string(want), string(got), "%q into spare capacity", s)
				size, _ := jsonval.Size(s)
				require.Equal(t, int64(len(want)), size, "%q", s)
			}
		}
	}
}
