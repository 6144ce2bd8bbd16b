package jsonval_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"

	"github.com/corral-rt/corral/internal/jsonval"
)

// FuzzAppend checks Append and Size against json.Marshal for decoded JSON
// documents (as float64 and as json.Number numbers), for the input as a
// string, as a json.Number and as a json.RawMessage, and for its first
// bytes as float64, float32 and int64 values.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{
		`null`, `{"a":[1,"x",true,null,{"b":1e-7}]}`, `"<\u2028>"`, `[1e21,-0.5,-0]`, "\"bad\xff\"",
		`{"z":1,"a":{"<":">"}}`, ` [ 1 , 2 ] `, `1.e5`, "\x01\u2029&",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) == nil {
			check(t, v)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if dec.Decode(&v) == nil {
			check(t, v)
		}
		if len(data) >= 8 { // any float64 bit pattern, NaNs and infinities included
			f := math.Float64frombits(binary.LittleEndian.Uint64(data))
			check(t, f)
			check(t, float32(f))
			check(t, math.Float32frombits(binary.LittleEndian.Uint32(data)))
			check(t, int64(binary.LittleEndian.Uint64(data)))
		}
		check(t, string(data))
		check(t, json.Number(data))
		check(t, json.RawMessage(data))
		check(t, []any{map[string]any{string(data): string(data)}})
		check(t, map[string]string{string(data): string(data)})
		check(t, map[string]any{string(data): json.RawMessage(data)})
		if half := len(data) / 2; half > 0 {
			check(t, map[string]string{string(data[:half]): "", string(data[half:]): string(data)})
		}
	})
}

// check fails t unless Append and Size agree with json.Marshal: the same
// bytes when they report true, and a json.Marshal error when they report
// false (every fuzzed value is inside the package's set).
func check(t *testing.T, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	got, ok := jsonval.Append(nil, v)
	size, sized := jsonval.Size(v)
	if ok != sized {
		t.Fatalf("Append ok=%v, Size ok=%v for %#v", ok, sized, v)
	}
	if !ok {
		if err == nil {
			t.Fatalf("Append reported false for %#v, json.Marshal wrote %s", v, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("Append wrote %s for %#v, json.Marshal failed: %v", got, v, err)
	}
	if !bytes.Equal(got, want) || size != int64(len(want)) {
		t.Fatalf("Append(%#v) = %s (Size %d), want %s", v, got, size, want)
	}
	if spare, _ := jsonval.Append(make([]byte, 0, 64), v); !bytes.Equal(spare, want) {
		t.Fatalf("Append(%#v) into spare capacity = %s, want %s", v, spare, want)
	}
	if _, ok := jsonval.AppendUpTo(nil, v, len(want)); !ok {
		t.Fatalf("AppendUpTo(%#v, %d) gave up", v, len(want))
	}
	if out, ok := jsonval.AppendUpTo([]byte("x"), v, len(want)); ok || string(out) != "x" {
		t.Fatalf("AppendUpTo(%#v, %d) = %s, %v; want it to give up", v, len(want), out, ok)
	}
}
