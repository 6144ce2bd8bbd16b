package js

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A primitive crosses without JSON text, with the same size and value as
// through JSON.stringify and the decoder; a string that may hold a lone
// surrogate takes the JSON path.
func TestPrimitivesCrossAsThroughJSON(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{})
	require.NoError(t, err)
	defer rt.Close()
	c, err := rt.fresh("")
	require.NoError(t, err)
	c.bind(context.Background(), "test", "n", rt.Limits())
	defer c.cancel()
	v, err := c.vm.RunString(`[undefined, null, true, false, 0, -0, 1, -1.5, 1e21, 1e-7, 2 ** 53 + 2, NaN, Infinity,
		0.1 + 0.2, "", "plain", "quo\"te\\back", "\b\t\n\f\r\x01\x1f", "<a&b>", "é漢😀", "\u2028", "lone \ud800",
		"\ufffd"]`)
	require.NoError(t, err)
	arr := v.ToObject(c.vm)
	fast := 0
	for i := int64(0); i < c.arrayLength(arr); i++ {
		el := arr.Get(strconv.FormatInt(i, 10))
		data := c.toJSON(el, 1<<20, "max_value_bytes")
		want := c.decodeValue(data)
		n, got, ok := primitiveJSON(el)
		if !ok {
			continue
		}
		fast++
		assert.Equal(t, int64(len(data)), n, "size of %v", el)
		assert.Equal(t, want, got, "value of %v", el)
	}
	assert.Equal(t, 21, fast, "every primitive but the two strings with U+FFFD")
}

// FuzzPrimitiveJSON checks the fast path of strings and numbers against
// JSON.stringify and the decoder.
func FuzzPrimitiveJSON(f *testing.F) {
	for _, s := range []string{"", "a", "quo\"te", "\x00\x1f", "é漢😀", "\ufffd", "<&>"} {
		f.Add(s, 1.5)
	}
	rt, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer rt.Close()
	c, err := rt.fresh("")
	if err != nil {
		f.Fatal(err)
	}
	c.bind(context.Background(), "fuzz", "n", rt.Limits())
	f.Fuzz(func(t *testing.T, s string, x float64) {
		for _, el := range []goja.Value{c.vm.ToValue(s), c.vm.ToValue(x)} {
			n, got, ok := primitiveJSON(el)
			if !ok {
				continue
			}
			data := c.toJSON(el, 1<<30, "max_value_bytes")
			if int64(len(data)) != n {
				t.Fatalf("size of %q: %d, want %d", el, n, len(data))
			}
			if want := c.decodeValue(data); want != got {
				t.Fatalf("value of %q: %#v, want %#v", el, got, want)
			}
		}
	})
}

// Small integers take their Go values from the runtime's table, equal to
// the ones made for each value.
func TestPrimitiveJSONNumbersTable(t *testing.T) {
	t.Parallel()
	vm := goja.New()
	numbers := newNumbers()
	for _, x := range []int64{0, 1, 7, smallNumbers - 1, smallNumbers, -1, 1 << 40} {
		n, got, ok := primitiveJSONIn(vm.ToValue(x), numbers)
		wantN, want, wantOK := primitiveJSON(vm.ToValue(x))
		require.True(t, ok)
		assert.Equal(t, wantOK, ok)
		assert.Equal(t, wantN, n, "%d", x)
		assert.Equal(t, want, got, "%d", x)
		assert.IsType(t, float64(0), got)
	}
}

// FuzzDecimalLen checks the length of an integer's text against
// strconv.
func FuzzDecimalLen(f *testing.F) {
	for _, x := range []int64{0, 9, 10, -1, -10, math.MaxInt64, math.MinInt64} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x int64) {
		if n, want := decimalLen(x), int64(len(strconv.FormatInt(x, 10))); n != want {
			t.Fatalf("decimalLen(%d) = %d, want %d", x, n, want)
		}
	})
}
