package wasm

// Immediates of the single-byte opcodes.
const (
	opInvalid  = iota // not an instruction of the enabled features
	opPlain           // no immediate
	opBlock           // block, loop, if: a block type, one level deeper
	opEnd             // end: one level up
	opIndex           // one u32
	opTwoIndex        // two u32 (call_indirect)
	opBrTable         // a vector of u32 and a u32
	opMemarg          // alignment and offset
	opI32             // i32.const
	opI64             // i64.const
	opF32             // f32.const
	opF64             // f64.const
	opRefNull         // a reference type byte
	opSelectT         // a vector of one value type
	opMisc            // 0xfc prefix
	opVector          // 0xfd prefix
	opCall            // call: a function index
)

// opcodes gives the immediates of each single-byte opcode wazero accepts
// with its default features (the 2.0 core: sign extension, saturating
// conversions, bulk memory, reference types, multiple values, SIMD).
// Exception handling, tail calls, typed function references, threads
// and garbage collection are not enabled, and their opcodes are invalid.
var opcodes = func() (t [256]uint8) {
	set := func(kind uint8, ops ...byte) {
		for _, op := range ops {
			t[op] = kind
		}
	}
	span := func(kind uint8, from, to byte) {
		for op := int(from); op <= int(to); op++ {
			t[op] = kind
		}
	}
	set(opPlain, 0x00, 0x01, 0x05, 0x0f, 0x1a, 0x1b, 0xd1) // unreachable nop else return drop select ref.is_null
	span(opPlain, 0x45, 0xc4)                              // numeric instructions and sign extension
	set(opBlock, 0x02, 0x03, 0x04)
	set(opEnd, 0x0b)
	set(opIndex, 0x0c, 0x0d, 0x25, 0x26, 0xd2) // br br_if table.get table.set ref.func
	span(opIndex, 0x20, 0x24)                  // local.get local.set local.tee global.get global.set
	set(opIndex, 0x3f, 0x40)                   // memory.size memory.grow (a reserved zero)
	set(opCall, 0x10)
	set(opTwoIndex, 0x11)
	set(opBrTable, 0x0e)
	span(opMemarg, 0x28, 0x3e)
	set(opI32, 0x41)
	set(opI64, 0x42)
	set(opF32, 0x43)
	set(opF64, 0x44)
	set(opRefNull, 0xd0)
	set(opSelectT, 0x1c)
	set(opMisc, 0xfc)
	set(opVector, 0xfd)
	return t
}()

// Immediates of the vector instructions.
const (
	vecInvalid = iota
	vecPlain
	vecMemarg     // loads and stores
	vecMemargLane // lane loads and stores
	vecLane       // extract_lane, replace_lane
	vec16Bytes    // v128.const, i8x16.shuffle
)

// vectorOps gives the immediates of each vector instruction. wazero reads
// the opcode after 0xfd as one byte, not as the LEB128 integer the
// specification says: an opcode past 0x7f is followed by the byte 0x01,
// which it then reads as a nop. The walk reads it the same way.
var vectorOps = func() (t [256]uint8) {
	for op := range t {
		t[op] = vecPlain
	}
	for op := 0x00; op <= 0x0b; op++ {
		t[op] = vecMemarg
	}
	t[0x5c], t[0x5d] = vecMemarg, vecMemarg
	for op := 0x54; op <= 0x5b; op++ {
		t[op] = vecMemargLane
	}
	for op := 0x15; op <= 0x22; op++ {
		t[op] = vecLane
	}
	t[0x0c], t[0x0d] = vec16Bytes, vec16Bytes
	for _, op := range []byte{0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb,
		0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee} { // unassigned
		t[op] = vecInvalid
	}
	return t
}()

// Sub-opcodes of the 0xfc prefix.
const (
	miscMaxSat   = 7  // i32.trunc_sat_f32_s … i64.trunc_sat_f64_u
	miscTableGrw = 15 // table.grow
	miscLast     = 17 // table.fill
)

// miscIndexes is how many u32 immediates each 0xfc instruction has.
var miscIndexes = [miscLast + 1]int{
	8: 2, 9: 1, 10: 2, 11: 1, // memory.init data.drop memory.copy memory.fill
	12: 2, 13: 1, 14: 2, // table.init elem.drop table.copy
	15: 1, 16: 1, 17: 1, // table.grow table.size table.fill
}

// typeShape is what the precheck keeps of a function type.
type typeShape struct{ params, results uint32 }

// bodyWalk walks one function body: it skips every instruction's
// immediates, and counts how deep blocks nest and the values the
// instructions move on the operand stack. It never allocates more than
// one label per nesting level, and stops as soon as a count passes its
// limit.
type bodyWalk struct {
	r reader
	// types are the module's types; funcTypes the type of each function.
	types     []typeShape
	funcTypes []uint32
	// tables are the module's tables; a table.grow marks its table as
	// grown by function fn.
	tables []tableShape
	fn     int

	maxNesting          int
	maxValues, maxPairs uint64

	nesting  int      // the deepest level reached
	branches uint64   // control instructions so far
	pairs    uint64   // pairs of them
	values   uint64   // values counted so far
	labels   []uint32 // values a branch to each open label carries, the function's own first
}

// walkError says where and why a walk stopped: at a limit ("nesting",
// "values" or "pairs"), or at an instruction wazero would refuse (what).
type walkError struct {
	at    int // offset in the body
	limit string
	what  string
}

// walk decodes every instruction up to the end of the body. Each
// instruction counts as one value; a call adds its callee's params and
// results; a block, loop or if the params of its type twice (taken, and
// given again inside) and its results; a br_if the values of its label,
// which it gives back. The count bounds what wazero's validator pushes
// and pops and the values its compiler makes.
func (w *bodyWalk) walk(results uint32) *walkError {
	w.labels = append(w.labels[:0], results)
	for {
		at := w.r.pos
		op, ok := w.r.byte()
		if !ok {
			return &walkError{at: at, what: "the body ends inside a block"}
		}
		if w.values++; w.values > w.maxValues {
			return &walkError{at: at, limit: "values"}
		}
		if isBranch(op) {
			if w.pairs += w.branches; w.pairs > w.maxPairs {
				return &walkError{at: at, limit: "pairs"}
			}
			w.branches++
		}
		var err *walkError
		switch opcodes[op] {
		case opInvalid:
			return &walkError{at: at, what: "opcode " + hexByte(op) + ", which is not enabled"}
		case opPlain:
		case opEnd:
			w.labels = w.labels[:len(w.labels)-1]
			if len(w.labels) == 0 {
				if w.r.left() != 0 {
					return &walkError{at: at, what: "instructions after the function's end"}
				}
				return nil
			}
		case opBlock:
			err = w.block(op, at)
		case opCall:
			fi, ok := w.r.u32()
			if !ok {
				return &walkError{at: at, what: "the immediates of call"}
			}
			if int(fi) < len(w.funcTypes) {
				w.values += w.typeValues(int64(w.funcTypes[fi]))
			}
		case opTwoIndex:
			ti, ok := w.r.u32()
			if _, ok2 := w.r.u32(); !ok || !ok2 {
				return &walkError{at: at, what: "the immediates of call_indirect"}
			}
			w.values += w.typeValues(int64(ti))
		default:
			err = w.immediates(op, at)
		}
		if err != nil {
			return err
		}
		if w.values > w.maxValues {
			return &walkError{at: at, limit: "values"}
		}
	}
}

// isBranch reports the control instructions: block, loop, if, else, br,
// br_if and br_table. Each makes a basic block of wazero's compiler,
// whose passes over a function take time in proportion to the pairs of
// its basic blocks.
func isBranch(op byte) bool { return op >= 0x02 && op <= 0x05 || op >= 0x0c && op <= 0x0e }

// typeValues is the params and results of type ti, or 0 for an index
// out of range (which wazero refuses).
func (w *bodyWalk) typeValues(ti int64) uint64 {
	if ti < 0 || ti >= int64(len(w.types)) {
		return 0
	}
	return uint64(w.types[ti].params) + uint64(w.types[ti].results)
}

// block opens a block, loop or if one level deeper.
func (w *bodyWalk) block(op byte, at int) *walkError {
	ti, ok := w.r.blockType()
	if !ok {
		return &walkError{at: at, what: "a block type"}
	}
	label := uint32(0)
	if ti == -1 {
		label = 1 // one result at most
	} else if ti < int64(len(w.types)) {
		t := w.types[ti]
		w.values += 2*uint64(t.params) + uint64(t.results)
		label = t.results
		if op == 0x03 { // a branch to a loop carries its params
			label = t.params
		}
	}
	if len(w.labels) > w.maxNesting {
		return &walkError{at: at, limit: "nesting"}
	}
	w.labels = append(w.labels, label)
	w.nesting = max(w.nesting, len(w.labels)-1)
	return nil
}

// immediates skips the immediates of the other instructions.
func (w *bodyWalk) immediates(op byte, at int) *walkError {
	r := &w.r
	ok := true
	switch opcodes[op] {
	case opIndex:
		var idx uint32
		idx, ok = r.u32()
		if ok && op == 0x0d && int(idx) < len(w.labels) { // br_if gives its label's values back
			w.values += uint64(w.labels[len(w.labels)-1-int(idx)])
		}
	case opBrTable:
		var n uint32
		if n, ok = r.u32(); ok && uint64(n) <= uint64(r.left()) {
			for i := uint32(0); i <= n && ok; i++ { // the labels and the default
				_, ok = r.u32()
			}
		} else {
			ok = false
		}
	case opMemarg:
		_, ok = r.u32()
		_, ok2 := r.u32()
		ok = ok && ok2
	case opI32:
		ok = r.signed(32)
	case opI64:
		ok = r.signed(64)
	case opF32:
		ok = r.skip(4)
	case opF64:
		ok = r.skip(8)
	case opRefNull:
		var b byte
		b, ok = r.byte()
		ok = ok && (b == 0x70 || b == 0x6f || b == 0x69)
	case opSelectT:
		var n byte
		n, ok = r.byte()
		if ok && n == 1 {
			ok = r.selectType()
		} else {
			ok = false
		}
	case opMisc:
		return w.misc(at)
	case opVector:
		return w.vector(at)
	}
	if !ok {
		return &walkError{at: at, what: "the immediates of opcode " + hexByte(op)}
	}
	return nil
}

// selectType skips the type of a typed select, as wazero reads it.
func (r *reader) selectType() bool {
	b, ok := r.byte()
	if !ok {
		return false
	}
	switch b {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	case refNullable, refNonNullable:
		return r.heapType()
	}
	return false
}

func (w *bodyWalk) misc(at int) *walkError {
	sub, ok := w.r.u32()
	if !ok || sub > miscLast {
		return &walkError{at: at, what: "a 0xfc instruction wazero does not know"}
	}
	if sub <= miscMaxSat {
		return nil
	}
	for i := 0; i < miscIndexes[sub]; i++ {
		idx, ok := w.r.u32()
		if !ok {
			return &walkError{at: at, what: "the immediates of a 0xfc instruction"}
		}
		if sub == miscTableGrw && int(idx) < len(w.tables) && w.tables[idx].grownBy < 0 {
			w.tables[idx].grownBy = w.fn
		}
	}
	return nil
}

func (w *bodyWalk) vector(at int) *walkError {
	r := &w.r
	sub, ok := r.byte()
	if ok {
		switch vectorOps[sub] {
		case vecInvalid:
			ok = false
		case vecMemarg, vecMemargLane:
			_, ok = r.u32()
			_, ok2 := r.u32()
			ok = ok && ok2
			if ok && vectorOps[sub] == vecMemargLane {
				_, ok = r.byte()
			}
		case vecLane:
			_, ok = r.byte()
		case vec16Bytes:
			ok = r.skip(16)
		}
	}
	if !ok {
		return &walkError{at: at, what: "a 0xfd instruction wazero does not know, or its immediates"}
	}
	return nil
}

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return "0x" + string([]byte{digits[b>>4], digits[b&15]})
}
