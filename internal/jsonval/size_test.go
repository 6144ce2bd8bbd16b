package jsonval_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/corral-rt/corral/internal/jsonval"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Numbers are sized as encoding/json writes them: integers through the
// counting fast path, every other number by formatting it.
func TestSizeOfNumbers(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 9, 10, -10, 99, 100, 123456789, -987654321,
		1 << 52, 1<<53 - 1, -(1<<53 - 1), 1 << 53, -(1 << 53), 1 << 60, 1e20, 1e21, -1e21, 0.5, -1.5, 1e-7, 123.456} {
		want, err := json.Marshal(f)
		require.NoError(t, err)
		n, ok := jsonval.Size(f)
		require.True(t, ok, "%v", f)
		assert.Equal(t, int64(len(want)), n, "%v", f)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, ok := jsonval.Size(f)
		assert.False(t, ok, "%v", f)
	}
}

// FuzzSizeOfNumber checks the size of any float64 against encoding/json.
func FuzzSizeOfNumber(f *testing.F) {
	for _, x := range []float64{0, 1, -7, 1e15, 1 << 53, 0.25, 1e21} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		n, ok := jsonval.Size(x)
		want, err := json.Marshal(x)
		if ok != (err == nil) {
			t.Fatalf("size of %v: ok %v, encoding/json error %v", x, ok, err)
		}
		if ok && n != int64(len(want)) {
			t.Fatalf("size of %v: %d, want %d", x, n, len(want))
		}
	})
}
