package proc

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stringified is v as JSON.stringify writes it: compact, with no HTML
// escapes (the runner's measure of max_value_bytes).
func stringified(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	require.NoError(t, e.Encode(v))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// REF 9.M18
// A value's measure is the size of the text JSON.stringify writes,
// whatever escapes or whitespace the worker sent it with; text that is not
// one JSON value is refused.
func TestScanValue(t *testing.T) {
	for text, want := range map[string]int64{
		`null`:                              4,
		` true `:                            4,
		`false`:                             5,
		`"\u003c\u003e\u0026"`:              5, // <>& as encoding/json escapes them
		`"\u0008\f\n\u001f\/"`:              2 + 2 + 2 + 2 + 6 + 1,
		`"é✓😀"`:                             2 + 2 + 3 + 4,
		`"\u00e9\u2713\ud83d\ude00"`:        2 + 2 + 3 + 4,
		`"\ud800x"`:                         2 + 3 + 1, // a lone surrogate half decodes to U+FFFD
		`[ 1 , 2.5 , -3e-07 , 1e+21 , -0 ]`: int64(len(`[1,2.5,-3e-7,1e+21,0]`)),
		`[1.23456789e+08,1e+06,1e-05,0e00,100e-2,1E20]`: int64(len(`[123456789,1000000,0.00001,0,1,100000000000000000000]`)),
		`{ "a" : [ {} , [] ] , "b" : "" }`:              int64(len(`{"a":[{},[]],"b":""}`)),
	} {
		m, cost, err := scanValue([]byte(text))
		require.NoError(t, err, text)
		assert.Equal(t, want, m, text)
		assert.GreaterOrEqual(t, cost, int64(slotCost), text)
	}
	for _, text := range []string{``, ` `, `[`, `]`, `[}`, `{]`, `"abc`, `"\u12"`, `1 2`, `[] []`, `x`, `"\`, `tru`} {
		_, _, err := scanValue([]byte(text))
		assert.Error(t, err, text)
	}
	deep := strings.Repeat("[", maxScanDepth+1) + strings.Repeat("]", maxScanDepth+1)
	_, _, err := scanValue([]byte(deep))
	assert.Error(t, err, "deeper than encoding/json goes")
	deep = strings.Repeat(`[{"k":`, 100) + "1" + strings.Repeat("}]", 100)
	m, _, err := scanValue([]byte(deep))
	require.NoError(t, err, "containers past 64 levels")
	assert.Equal(t, int64(len(deep)), m)
}

// bloatFrame is a result frame of one write whose value is n bytes of
// `[[],[],...]`: each pair of brackets and its comma decode to an
// interface and a slice header.
func bloatFrame(t testing.TB, n int) []byte {
	val := make([]byte, 0, n)
	val = append(val, '[')
	for len(val) < n-3 {
		val = append(val, "[],"...)
	}
	val = append(val, "[]]"...)
	return resultFrame(t, val)
}

// resultFrame is a result frame (header included) of one setVar of x to
// the JSON text val.
func resultFrame(t testing.TB, val []byte) []byte {
	e := enc{b: []byte{0, 0, 0, 0, byte(frameResult)}}
	e.uint(1)
	e.int(0)
	e.uint(1)
	e.uint(uint64(sandbox.SetVar))
	e.str("x")
	e.raw(val)
	e.uint(0) // messages
	e.uint(0) // value
	e.uint(0) // error
	n := len(e.b) - 4
	e.b[0], e.b[1], e.b[2], e.b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return e.b
}

// allocated is what f allocates on the heap (TotalAlloc, which no
// collection lowers).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// REF 9.M18
// A result frame whose values would take the parent more heap than the
// call's budget is refused before they are decoded: reading a 32 MiB
// frame of `[[],[],...]` (some 500 MiB decoded) under an 8 MiB
// memory_bytes allocates the frame's bytes and no more than a few KiB
// besides, where decoding it would take about fifteen times its size. A
// frame within the budget decodes, allocating at most a small multiple
// of the budget.
func TestResultBudget(t *testing.T) {
	limits := sandbox.Limits{MemoryBytes: 8 << 20}.WithDefaults()
	limits.MaxValueBytes = 64 << 20 // the budget, not max_value_bytes, refuses it here
	b := newBudget(limits, 0)
	require.Equal(t, int64(16<<20), b.cost)

	raw := bloatFrame(t, 32<<20)
	var err error
	grew := allocated(func() {
		var f frame
		f, err = readFrame(bytes.NewReader(raw), DefaultMaxFrameBytes)
		if err == nil {
			err = decodeIn(f, frameResult, &resultMsg{}, b)
		}
	})
	require.ErrorIs(t, err, errFrame)
	assert.ErrorContains(t, err, "decoding budget")
	assert.Less(t, grew, uint64(len(raw))+64<<10, "allocated %d bytes for a frame of %d", grew, len(raw))

	ok := bloatFrame(t, 256<<10) // 87k arrays: some 4 MiB by the estimate
	b = newBudget(limits, 0)
	grew = allocated(func() {
		var f frame
		f, err = readFrame(bytes.NewReader(ok), DefaultMaxFrameBytes)
		if err == nil {
			err = decodeIn(f, frameResult, &resultMsg{}, b)
		}
	})
	require.NoError(t, err)
	used := b.cost - b.left
	assert.Greater(t, used, int64(len(ok))*8, "the estimate sees the slots and headers")
	assert.Less(t, int64(grew), int64(len(ok))+4*used, "allocated %d bytes for %d estimated", grew, used)
	t.Logf("a frame of %d bytes: %d estimated, %d allocated", len(ok), used, grew)

	// The worker's cap bounds the budget too.
	assert.Equal(t, int64(1<<20), newBudget(limits, 1<<20).cost)
}

// REF 9.M18
// A var's value or an evaluation's value past the call's max_value_bytes,
// by the runner's measure, is a malformed frame; a value at the limit
// whose text is longer only by the escapes it crossed with is not.
func TestResultValueBound(t *testing.T) {
	limits := sandbox.Limits{MaxValueBytes: 1024}.WithDefaults()
	at := strings.Repeat("<", 1022) // 1024 bytes stringified, 6134 as encoding/json escapes it
	for name, c := range map[string]struct {
		msg *resultMsg
		ok  bool
	}{
		"var at the limit":    {&resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.SetVar, Name: "x", Value: at}}}, true},
		"var past it":         {&resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.SetVar, Name: "x", Value: at + "<"}}}, false},
		"eval value at it":    {&resultMsg{ID: 1, Value: at}, true},
		"eval value past it":  {&resultMsg{ID: 1, Value: []any{at}}, false},
		"many values at it":   {&resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.SetVar, Name: "x", Value: at}, {Op: sandbox.SetVar, Name: "y", Value: at}}}, true},
		"a nested value past": {&resultMsg{ID: 1, Writes: []writeMsg{{Op: sandbox.SetVar, Name: "x", Value: map[string]any{"k": at}}}}, false},
	} {
		// The fallback of the encoder: json.Marshal, which escapes <.
		e := enc{}
		e.uint(c.msg.ID)
		e.int(0)
		e.uint(uint64(len(c.msg.Writes)))
		for _, w := range c.msg.Writes {
			e.uint(uint64(w.Op))
			e.str(w.Name)
			data, err := json.Marshal(w.Value)
			require.NoError(t, err)
			e.raw(data)
			e.uint(0)
		}
		if c.msg.Value != nil {
			data, err := json.Marshal(c.msg.Value)
			require.NoError(t, err)
			e.raw(data)
		} else {
			e.uint(0)
		}
		e.uint(0)
		var got resultMsg
		err := decodeIn(frame{frameResult, e.b}, frameResult, &got, newBudget(limits, 0))
		if c.ok {
			require.NoError(t, err, name)
			assert.Equal(t, c.msg.writes(), got.writes(), name)
		} else {
			assert.ErrorIs(t, err, errFrame, name)
			assert.ErrorContains(t, err, "max_value_bytes", name)
		}
	}
}

// FuzzScanValue: on any text, scanValue neither panics nor fails on a
// JSON value; what a worker encodes (either encoder) measures no more than
// the text JSON.stringify writes of it, so that a value a runner let
// through is never refused.
func FuzzScanValue(f *testing.F) {
	for _, s := range []string{`null`, `[1,-0,1e-07,"a\u003c"]`, `{"k":{"":[[],{}]}}`, `"\ud83d\ude00\ud800"`, `[`, `"\u00`, ` 5 `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		m, cost, err := scanValue(p)
		var v any
		if json.Unmarshal(p, &v) != nil {
			return
		}
		require.NoError(t, err, "%q", p)
		assert.Positive(t, cost)
		want := int64(len(stringified(t, v)))
		fast, ok := appendJSON(nil, v, 0)
		marshalled, err := json.Marshal(v)
		require.NoError(t, err)
		texts := [][]byte{marshalled}
		if ok {
			texts = append(texts, fast)
		}
		for _, text := range texts {
			m, _, err = scanValue(text)
			require.NoError(t, err, "%q", text)
			assert.LessOrEqual(t, m, want, "%q", text)
		}
	})
}
