package wasm

// The decoding half of the precheck: a reader of the binary format that
// never reads past its bytes, and a walk over a function's instructions
// that skips their immediates as wazero reads them. Where wazero reads an
// encoding in its own way, the walk reads it the same way, so that every
// module wazero accepts is seen here as wazero sees it; a failure only
// says that wazero would refuse the module too.

// reader reads buf from pos. A read that would pass the end, or an
// integer encoded past its width, fails (false) and leaves pos anywhere.
type reader struct {
	buf []byte
	pos int
}

func (r *reader) left() int { return len(r.buf) - r.pos }

func (r *reader) byte() (byte, bool) {
	if r.pos >= len(r.buf) {
		return 0, false
	}
	b := r.buf[r.pos]
	r.pos++
	return b, true
}

// skip passes n bytes.
func (r *reader) skip(n uint64) bool {
	if n > uint64(r.left()) {
		return false
	}
	r.pos += int(n)
	return true
}

// bytes returns the next n bytes.
func (r *reader) bytes(n uint64) ([]byte, bool) {
	start := r.pos
	if !r.skip(n) {
		return nil, false
	}
	return r.buf[start:r.pos], true
}

// u32 reads an unsigned LEB128 integer of at most five bytes whose value
// fits 32 bits.
func (r *reader) u32() (uint32, bool) {
	var v uint32
	for i := 0; i < 5; i++ {
		b, ok := r.byte()
		if !ok {
			return 0, false
		}
		if b < 0x80 {
			if i == 4 && b&0xf0 != 0 {
				return 0, false
			}
			return v | uint32(b)<<(7*i), true
		}
		v |= uint32(b&0x7f) << (7 * i)
	}
	return 0, false
}

// u32len is u32 with the number of bytes read.
func (r *reader) u32len() (uint32, int, bool) {
	start := r.pos
	v, ok := r.u32()
	return v, r.pos - start, ok
}

// signed skips a signed LEB128 integer of width bits (32 or 64): at most
// ceil(width/7) bytes, the unused bits of the last one equal to the sign,
// as wazero checks them.
func (r *reader) signed(width int) bool {
	maxLen := (width + 6) / 7
	for i := 0; i < maxLen; i++ {
		b, ok := r.byte()
		if !ok {
			return false
		}
		if b&0x80 != 0 {
			continue
		}
		if i < maxLen-1 {
			return true
		}
		// The last byte: wazero checks the bits above the value's top bit
		// (but not the sign bit of the byte itself) against the sign.
		used := width - 7*(maxLen-1)
		sign := b >> (used - 1) & 1
		unused := b & (0x3f &^ (1<<used - 1)) // bits used..5
		want := byte(0)
		if sign == 1 {
			want = 0x3f &^ (1<<used - 1)
		}
		return unused == want
	}
	return false
}

// s33 reads a signed 33-bit LEB128 integer (a block type or a heap type)
// as wazero reads it: at most five bytes, the fifth taken as the last
// whatever its high bit says.
func (r *reader) s33() (int64, bool) {
	var v int64
	var b byte
	n := 0
	for shift := 0; shift < 35; shift += 7 {
		var ok bool
		if b, ok = r.byte(); !ok {
			return 0, false
		}
		n++
		v |= int64(b&0x7f) << shift
		if b&0x80 == 0 {
			break
		}
	}
	if shift := 7 * n; shift < 33 && b&0x40 != 0 {
		v |= (1<<33 - 1) << shift
	}
	v &= 1<<33 - 1
	if v&(1<<32) != 0 {
		v -= 1 << 33
	}
	if n == 5 && (b&0x20 != 0) != (v < 0) {
		return 0, false
	}
	return v, true
}

// Heap types (negative s33 values) wazero knows.
const (
	heapFunc   = -16
	heapExtern = -17
	heapExn    = -23
)

// Bytes of value and reference types.
const (
	refNullable    = 0x63 // (ref null ht)
	refNonNullable = 0x64 // (ref ht)
)

// valueType skips a value type: one byte, or a reference prefix and its
// heap type.
func (r *reader) valueType() bool {
	b, ok := r.byte()
	if !ok {
		return false
	}
	switch b {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f, 0x69: // i32 i64 f32 f64 v128 funcref externref exnref
		return true
	case refNullable, refNonNullable:
		return r.heapType()
	}
	return false
}

func (r *reader) heapType() bool {
	ht, ok := r.s33()
	return ok && (ht >= 0 || ht == heapFunc || ht == heapExtern || ht == heapExn)
}

// blockType skips the type of a block, loop or if and returns its type
// index when it names one (-1 otherwise).
func (r *reader) blockType() (int64, bool) {
	v, ok := r.s33()
	if !ok {
		return -1, false
	}
	switch v {
	case -64, -1, -2, -3, -4, -5, -16, -17, -23: // empty, i32 i64 f32 f64 v128 funcref externref exnref
		return -1, true
	case -29, -28: // ref null ht, ref ht
		return -1, r.heapType()
	}
	return v, v >= 0
}

// constExpr skips a constant expression up to its end, as wazero decodes
// one (extended constant expressions are not enabled).
func (r *reader) constExpr() bool {
	for {
		op, ok := r.byte()
		if !ok {
			return false
		}
		switch op {
		case 0x0b: // end
			return true
		case 0x41: // i32.const
			ok = r.signed(32)
		case 0x42: // i64.const
			ok = r.signed(64)
		case 0x43: // f32.const
			ok = r.skip(4)
		case 0x44: // f64.const
			ok = r.skip(8)
		case 0x23, 0xd2: // global.get, ref.func
			_, ok = r.u32()
		case 0xd0: // ref.null: a reference type byte, or else a type index
			var b byte
			if b, ok = r.byte(); ok && b != 0x70 && b != 0x6f && b != 0x69 {
				r.pos--
				_, ok = r.u32()
			}
		case 0xfd: // v128.const
			var sub byte
			sub, ok = r.byte()
			ok = ok && sub == 0x0c && r.skip(16)
		default:
			return false
		}
		if !ok {
			return false
		}
	}
}
