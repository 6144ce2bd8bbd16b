package jsonval

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// plainBytes has a '1' at index b for each byte b written as it is inside
// a JSON string with HTML escaping on (as json.Marshal writes strings):
// every ASCII byte from 0x20 up except '"', '\\', '<', '>' and '&'. The
// bytes from 0x80 up, parts of multibyte characters, take the slow path.
const plainBytes = "" +
	"0000000000000000" + "0000000000000000" + // 0x00-0x1f: control characters
	"1101110111111111" + "1111111111110101" + // 0x20-0x3f: '"', '&', '<', '>'
	"1111111111111111" + "1111111111110111" + // 0x40-0x5f: '\\'
	"1111111111111111" + "1111111111111111" + // 0x60-0x7f
	"0000000000000000" + "0000000000000000" + "0000000000000000" + "0000000000000000" + // 0x80-0xbf
	"0000000000000000" + "0000000000000000" + "0000000000000000" + "0000000000000000" // 0xc0-0xff

// plain reports whether the byte b is written as it is (a table of 256
// entries indexed by a byte needs no bounds check).
func plain(b byte) bool { return plainBytes[b] == '1' }

// plainRun returns the end of the run of plain ASCII bytes in s that starts
// at i, testing eight bytes at a time while it can.
func plainRun(s string, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// The high bit of a byte of special is set where a byte of w is
		// non-ASCII, below 0x20 or one of '"', '\\', '<', '>', '&' (each
		// term is exact as a whole: set for some byte exactly when some
		// byte of w matches).
		special := w | (w-ones*0x20)&^w |
			zeroByte(w^(ones*'"')) | zeroByte(w^(ones*'\\')) |
			zeroByte(w^(ones*'<')) | zeroByte(w^(ones*'>')) | zeroByte(w^(ones*'&'))
		if special&highs != 0 {
			break
		}
	}
	for i < len(s) && plain(s[i]) {
		i++
	}
	return i
}

// zeroByte has the high bit of some byte set exactly when some byte of x is
// zero.
func zeroByte(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (x - ones) &^ x & highs
}

// AppendString appends s as a JSON string, escaped as json.Marshal escapes
// it (see the package documentation).
func AppendString(dst []byte, s string) []byte {
	if len(s) <= shortString && cap(dst)-len(dst) >= len(s)+2 {
		if out, ok := appendShortString(dst, s); ok {
			return out
		}
	}
	i := plainRun(s, 0)
	dst = append(dst, '"')
	dst = append(dst, s[:i]...)
	if i == len(s) { // the common case: nothing to escape
		return append(dst, '"')
	}
	return appendEscaped(dst, s, i)
}

// shortString is the longest string appendShortString takes: keys, names
// and ids, where a byte loop costs less than the word-wise scan.
const shortString = 24

// appendShortString writes s quoted into the spare capacity of dst, which
// must hold len(s)+2 more bytes, checking each byte as it copies it; it
// reports false, with dst unchanged, at the first byte that is not plain.
func appendShortString(dst []byte, s string) ([]byte, bool) {
	n := len(dst)
	dst = dst[:n+len(s)+2]
	b := dst[n+1:][:len(s)] // of the length of s: no bounds checks in the loop
	for i := range b {
		c := s[i]
		if !plain(c) {
			return dst[:n], false
		}
		b[i] = c
	}
	dst[n], dst[len(dst)-1] = '"', '"'
	return dst, true
}

// appendEscaped appends s[i:], where s[i] is not plain, and the closing
// quote.
func appendEscaped(dst []byte, s string, i int) []byte {
	done := i // s[:done] is written
	for i < len(s) {
		if i = plainRun(s, i); i == len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			dst = append(dst, s[done:i]...)
			dst = appendEscapedASCII(dst, b)
			i++
			done = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, s[done:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[done:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		done = i
	}
	dst = append(dst, s[done:]...)
	return append(dst, '"')
}

// appendEscapedASCII appends the escape of an ASCII byte that is not plain.
func appendEscapedASCII(dst []byte, b byte) []byte {
	switch b {
	case '"', '\\':
		return append(dst, '\\', b)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
}

// StringSize is len(AppendString(nil, s)), computed without building it.
func StringSize(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		j := plainRun(s, i)
		n += int64(j - i)
		if i = j; i == len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t' {
				n += 2
			} else {
				n += 6 // \u00XX
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += int64(size)
		}
		i += size
	}
	return n
}

// appendFloat appends f, a float of the given bit size (32 or 64), as
// json.Marshal writes it; ok is false for NaN and the infinities.
func appendFloat(dst []byte, f float64, bits int) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	if bits == 64 && f == math.Trunc(f) && math.Abs(f) < 1<<53 && (f != 0 || !math.Signbit(f)) {
		// An integer below 2^53, where float64s are at most 1 apart: its
		// digits are the shortest form that reads back as f, so they are
		// written without the float conversion. (Not for float32, whose
		// shortest form of 123456792 is 123456790.)
		return strconv.AppendInt(dst, int64(f), 10), true
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// A one-digit negative exponent is written e-7, not e-07.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// floatSize is the length appendFloat writes.
func floatSize(f float64, bits int) (int64, bool) {
	// An integer a float64 holds exactly (not -0) is written as its
	// decimal digits: counted without formatting.
	if bits == 64 && f == math.Trunc(f) && -maxExactInt < f && f < maxExactInt && (f != 0 || !math.Signbit(f)) {
		return intSize(int64(f)), true
	}
	var buf [32]byte
	b, ok := appendFloat(buf[:0], f, bits)
	return int64(len(b)), ok
}

// maxExactInt bounds the integers floatSize counts without formatting:
// below it a float64 holds every integer exactly.
const maxExactInt = 1 << 53

// intSize is the length of strconv.AppendInt(nil, i, 10).
func intSize(i int64) int64 {
	if i < 0 {
		if i == math.MinInt64 {
			return 20
		}
		return 1 + uintSize(uint64(-i))
	}
	return uintSize(uint64(i))
}

// uintSize is the length of strconv.AppendUint(nil, u, 10).
func uintSize(u uint64) int64 {
	n := int64(1)
	for u >= 10 {
		u /= 10
		n++
	}
	return n
}

// number returns the text json.Marshal writes for the json.Number s: "0"
// for the empty string, s itself when it is a valid JSON number; ok is
// false otherwise.
func number(s string) (string, bool) {
	if s == "" {
		return "0", true
	}
	return s, validNumber(s)
}

// validNumber reports whether s follows the JSON number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = skipDigits(s, i+1)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

func skipDigits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}
