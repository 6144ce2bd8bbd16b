package wasm

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each integer encoding is read as wazero's leb128 package reads it:
// what it accepts, and how many bytes.
func TestReaderIntegers(t *testing.T) {
	type read func(r *reader) bool
	u32 := func(want uint32) read {
		return func(r *reader) bool { v, ok := r.u32(); return ok && v == want }
	}
	s33 := func(want int64) read {
		return func(r *reader) bool { v, ok := r.s33(); return ok && v == want }
	}
	s32 := func(r *reader) bool { return r.signed(32) }
	s64 := func(r *reader) bool { return r.signed(64) }
	for _, c := range []struct {
		name string
		in   []byte
		read read
		ok   bool
		n    int // bytes read when ok
	}{
		{"u32 zero", []byte{0x00}, u32(0), true, 1},
		{"u32 127", []byte{0x7f}, u32(127), true, 1},
		{"u32 128", []byte{0x80, 0x01}, u32(128), true, 2},
		{"u32 overlong zero", []byte{0x80, 0x80, 0x80, 0x80, 0x00}, u32(0), true, 5},
		{"u32 max", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, u32(1<<32 - 1), true, 5},
		{"u32 past 32 bits", []byte{0xff, 0xff, 0xff, 0xff, 0x1f}, u32(0), false, 0},
		{"u32 six bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, u32(0), false, 0},
		{"u32 truncated", []byte{0x80}, u32(0), false, 0},
		{"u32 empty", nil, u32(0), false, 0},
		{"s32 -1", []byte{0x7f}, s32, true, 1},
		{"s32 min", []byte{0x80, 0x80, 0x80, 0x80, 0x78}, s32, true, 5},
		{"s32 max", []byte{0xff, 0xff, 0xff, 0xff, 0x07}, s32, true, 5},
		{"s32 unused bits unlike the sign", []byte{0xff, 0xff, 0xff, 0xff, 0x17}, s32, false, 0},
		{"s32 negative, unused bits clear", []byte{0x80, 0x80, 0x80, 0x80, 0x48}, s32, false, 0},
		{"s32 sign bit of the byte unchecked, as wazero", []byte{0xff, 0xff, 0xff, 0xff, 0x47}, s32, true, 5},
		{"s32 six bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, s32, false, 0},
		{"s64 -1", []byte{0x7f}, s64, true, 1},
		{"s64 ten bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, s64, true, 10},
		{"s64 ten bytes, unused bits", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x03}, s64, false, 0},
		{"s64 eleven bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, s64, false, 0},
		{"s33 empty block type", []byte{0x40}, s33(-64), true, 1},
		{"s33 i32", []byte{0x7f}, s33(-1), true, 1},
		{"s33 type index 200", []byte{0xc8, 0x01}, s33(200), true, 2},
		{"s33 five bytes, high bit of the fifth ignored as wazero", []byte{0x80, 0x80, 0x80, 0x80, 0x80}, s33(0), true, 5},
		{"s33 five bytes, unused bit unlike the sign", []byte{0x80, 0x80, 0x80, 0x80, 0x20}, s33(0), false, 0},
		{"s33 truncated", []byte{0x80, 0x80}, s33(0), false, 0},
	} {
		r := &reader{buf: c.in}
		ok := c.read(r)
		assert.Equal(t, c.ok, ok, c.name)
		if c.ok && ok {
			assert.Equal(t, c.n, r.pos, "%s: bytes read", c.name)
		}
	}
}

func TestReaderTypesAndConstants(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		read func(r *reader) bool
		ok   bool
	}{
		{"i32", []byte{0x7f}, (*reader).valueType, true},
		{"v128", []byte{0x7b}, (*reader).valueType, true},
		{"exnref, which wazero decodes", []byte{0x69}, (*reader).valueType, true},
		{"(ref null func)", []byte{0x63, 0x70}, (*reader).valueType, true},
		{"(ref 3)", []byte{0x64, 0x03}, (*reader).valueType, true},
		{"(ref of an unknown abstract type)", []byte{0x64, 0x60}, (*reader).valueType, false},
		{"an unknown type", []byte{0x40}, (*reader).valueType, false},
		{"i32.const 1", []byte{0x41, 0x01, 0x0b}, (*reader).constExpr, true},
		{"f64.const", []byte{0x44, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b}, (*reader).constExpr, true},
		{"f64.const truncated", []byte{0x44, 0, 0, 0x0b}, (*reader).constExpr, false},
		{"global.get 0", []byte{0x23, 0x00, 0x0b}, (*reader).constExpr, true},
		{"ref.null func", []byte{0xd0, 0x70, 0x0b}, (*reader).constExpr, true},
		{"ref.null of a type index", []byte{0xd0, 0x05, 0x0b}, (*reader).constExpr, true},
		{"v128.const", append([]byte{0xfd, 0x0c}, append(make([]byte, 16), 0x0b)...), (*reader).constExpr, true},
		{"v128 other than const", []byte{0xfd, 0x0d, 0x0b}, (*reader).constExpr, false},
		{"i32.add (extended constants, not enabled)", []byte{0x41, 0x00, 0x41, 0x00, 0x6a, 0x0b}, (*reader).constExpr, false},
		{"no end", []byte{0x41, 0x00}, (*reader).constExpr, false},
	} {
		assert.Equal(t, c.ok, c.read(&reader{buf: c.in}), c.name)
	}
}

// The walk of a body: what it accepts, how deep it finds it nests, how
// many values it counts, and which tables it finds grown.
func TestBodyWalk(t *testing.T) {
	types := []typeShape{{0, 0}, {0, 3}, {2, 1}}
	for _, c := range []struct {
		name    string
		body    []byte
		err     string // "" for accepted
		nesting int
		values  uint64
		grown   bool
	}{
		{name: "an empty body", body: []byte{0x0b}, values: 1},
		{name: "nothing", body: nil, err: "ends inside a block"},
		{name: "no end", body: []byte{0x01}, err: "ends inside a block"},
		{name: "instructions after the end", body: []byte{0x0b, 0x01}, err: "after the function's end"},
		{name: "three nested blocks", body: []byte{0x02, 0x40, 0x03, 0x40, 0x04, 0x40, 0x0b, 0x0b, 0x0b, 0x0b},
			nesting: 3, values: 7},
		{name: "a block left open", body: []byte{0x02, 0x40, 0x0b}, err: "ends inside a block"},
		{name: "a block of type 2: its params twice, its results", body: []byte{0x02, 0x02, 0x0b, 0x0b},
			nesting: 1, values: 3 + 2*2 + 1},
		{name: "a block type out of range", body: []byte{0x02, 0x7a, 0x0b, 0x0b}, err: "block type"},
		{name: "a call of function 1 (type 1: three results)", body: []byte{0x10, 0x01, 0x0b}, values: 2 + 3},
		{name: "call_indirect of type 2", body: []byte{0x11, 0x02, 0x00, 0x0b}, values: 2 + 3},
		{name: "br_if to a block of three results", body: []byte{0x02, 0x01, 0x41, 0x00, 0x0d, 0x00, 0x0b, 0x0b},
			nesting: 1, values: 5 + 3 + 3},
		{name: "br_table of two labels", body: []byte{0x02, 0x40, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x0b, 0x0b},
			nesting: 1, values: 4},
		{name: "br_table counting past its bytes", body: []byte{0x0e, 0xff, 0x0b}, err: "immediates"},
		{name: "a load's memarg", body: []byte{0x28, 0x02, 0x80, 0x01, 0x1a, 0x0b}, values: 3},
		{name: "a memarg truncated", body: []byte{0x28, 0x02}, err: "immediates"},
		{name: "i64.const of ten bytes", body: append([]byte{0x42}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x0b), values: 2},
		{name: "typed select", body: []byte{0x1c, 0x01, 0x7f, 0x0b}, values: 2},
		{name: "typed select of two types", body: []byte{0x1c, 0x02, 0x7f, 0x7f, 0x0b}, err: "immediates"},
		{name: "ref.null extern", body: []byte{0xd0, 0x6f, 0x0b}, values: 2},
		{name: "ref.null of a type index (typed function references, not enabled)", body: []byte{0xd0, 0x00, 0x0b}, err: "immediates"},
		{name: "i32.trunc_sat_f32_s", body: []byte{0xfc, 0x00, 0x0b}, values: 2},
		{name: "memory.copy", body: []byte{0xfc, 0x0a, 0x00, 0x00, 0x0b}, values: 2},
		{name: "0xfc with an overlong sub-opcode", body: []byte{0xfc, 0x80, 0x00, 0x0b}, values: 2},
		{name: "0xfc 18", body: []byte{0xfc, 0x12, 0x0b}, err: "0xfc"},
		{name: "table.grow", body: []byte{0xfc, 0x0f, 0x00, 0x0b}, values: 2, grown: true},
		{name: "table.grow of another table", body: []byte{0xfc, 0x0f, 0x01, 0x0b}, values: 2},
		{name: "v128.const", body: append(append([]byte{0xfd, 0x0c}, make([]byte, 16)...), 0x0b), values: 2},
		{name: "v128.const truncated", body: []byte{0xfd, 0x0c, 0x00, 0x0b}, err: "0xfd"},
		{name: "a lane load", body: []byte{0xfd, 0x54, 0x00, 0x00, 0x03, 0x0b}, values: 2},
		{name: "i16x8.abs as wat2wasm writes it (0x80 0x01: a nop after, for wazero)", body: []byte{0xfd, 0x80, 0x01, 0x0b}, values: 3},
		{name: "an unassigned vector opcode", body: []byte{0xfd, 0x9a, 0x0b}, err: "0xfd"},
		{name: "return_call (tail calls, not enabled)", body: []byte{0x12, 0x00, 0x0b}, err: "opcode 0x12"},
		{name: "try_table (exception handling, not enabled)", body: []byte{0x1f, 0x40, 0x00, 0x0b, 0x0b}, err: "opcode 0x1f"},
		{name: "an atomic (threads, not enabled)", body: []byte{0xfe, 0x03, 0x00, 0x0b}, err: "opcode 0xfe"},
		{name: "a garbage-collection instruction (not enabled)", body: []byte{0xfb, 0x00, 0x0b}, err: "opcode 0xfb"},
	} {
		tables := []tableShape{{grownBy: -1}}
		w := bodyWalk{r: reader{buf: c.body}, types: types, funcTypes: []uint32{0, 1}, tables: tables, fn: 7,
			maxNesting: 100, maxValues: 1000, maxPairs: 1000}
		err := w.walk(0)
		if c.err != "" {
			if assert.NotNil(t, err, c.name) {
				assert.Contains(t, err.what, c.err, c.name)
			}
			continue
		}
		if !assert.Nil(t, err, c.name) {
			continue
		}
		assert.Equal(t, c.nesting, w.nesting, "%s: nesting", c.name)
		assert.Equal(t, c.values, w.values, "%s: values", c.name)
		assert.Equal(t, c.grown, tables[0].grownBy == 7, "%s: table grown", c.name)
	}
}

// The walk stops at the first instruction past a limit, whatever
// follows.
func TestBodyWalkLimits(t *testing.T) {
	nested := []byte{0x02, 0x40, 0x02, 0x40, 0x02, 0x40, 0x0b, 0x0b, 0x0b, 0x0b}
	w := bodyWalk{r: reader{buf: nested}, maxNesting: 2, maxValues: 100, maxPairs: 100}
	assert.Equal(t, &walkError{at: 4, limit: "nesting"}, w.walk(0))

	w = bodyWalk{r: reader{buf: nested}, maxNesting: 3, maxValues: 4, maxPairs: 100}
	assert.Equal(t, &walkError{at: 7, limit: "values"}, w.walk(0))

	brifs := []byte{0x02, 0x40, 0x41, 0, 0x0d, 0, 0x41, 0, 0x0d, 0, 0x41, 0, 0x0d, 0, 0x0b, 0x0b}
	w = bodyWalk{r: reader{buf: brifs}, maxNesting: 3, maxValues: 100, maxPairs: 5} // 0+1+2+3 pairs
	assert.Equal(t, &walkError{at: 12, limit: "pairs"}, w.walk(0))
}
