package event

import (
	"encoding/binary"
	"math"
	"testing"
)

// encodeIDBits is encodeID written as the generic bit loop over the 12
// bytes: five bits per character, most significant first, the final bit
// padded with four zeros.
func encodeIDBits(hi uint64, lo uint32) string {
	var raw [12]byte
	binary.BigEndian.PutUint64(raw[:8], hi)
	binary.BigEndian.PutUint32(raw[8:], lo)
	var out []byte
	var acc uint64
	bits := 0
	for _, b := range raw {
		acc = acc<<8 | uint64(b)
		bits += 8
		for bits >= 5 {
			bits -= 5
			out = append(out, idAlphabet[(acc>>uint(bits))&31])
		}
	}
	if bits > 0 {
		out = append(out, idAlphabet[(acc<<uint(5-bits))&31])
	}
	return string(out)
}

func TestEncodeIDMatchesBitLoop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		hi uint64
		lo uint32
	}{
		{0, 0}, {math.MaxUint64, math.MaxUint32}, {1, 0}, {0, 1}, {1 << 63, 1 << 31},
		{0x0123456789abcdef, 0xfedcba98}, {15, 0x80000000}, {0xaaaaaaaaaaaaaaaa, 0x55555555},
	} {
		got, want := encodeID(tc.hi, tc.lo), encodeIDBits(tc.hi, tc.lo)
		if got != want || len(got) != IDLen {
			t.Errorf("encodeID(%#x, %#x) = %q, want %q", tc.hi, tc.lo, got, want)
		}
	}
}

func FuzzEncodeID(f *testing.F) {
	f.Add(uint64(0), uint32(0))
	f.Add(uint64(math.MaxUint64), uint32(math.MaxUint32))
	f.Add(uint64(0x0123456789abcdef), uint32(0xfedcba98))
	f.Fuzz(func(t *testing.T, hi uint64, lo uint32) {
		if got, want := encodeID(hi, lo), encodeIDBits(hi, lo); got != want {
			t.Fatalf("encodeID(%#x, %#x) = %q, want %q", hi, lo, got, want)
		}
		// Ids sort as their bits do.
		if hi < math.MaxUint64 && encodeID(hi, lo) >= encodeID(hi+1, lo) {
			t.Fatalf("id of %#x does not sort before that of %#x", hi, hi+1)
		}
	})
}
