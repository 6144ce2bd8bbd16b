package wasm

// A module builder for the tests: WebAssembly binaries written byte by
// byte, hostile ones included.

// uleb is v as an unsigned LEB128 integer.
func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		if v >>= 7; v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// cat concatenates its parts.
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// vec is a vector of the items: their count, then each.
func vec(items ...[]byte) []byte { return cat(uleb(uint64(len(items))), cat(items...)) }

// vecN is a vector of n items, each item.
func vecN(n int, item []byte) []byte {
	b := uleb(uint64(n))
	for range n {
		b = append(b, item...)
	}
	return b
}

// str is a name: its length, then its bytes.
func str(s string) []byte { return cat(uleb(uint64(len(s))), []byte(s)) }

// section is a section of id with its content.
func section(id byte, content ...[]byte) []byte {
	c := cat(content...)
	return cat([]byte{id}, uleb(uint64(len(c))), c)
}

// wasmBinary is the header and the sections.
func wasmBinary(sections ...[]byte) []byte {
	return cat([]byte("\x00asm\x01\x00\x00\x00"), cat(sections...))
}

// code is one code entry: its size, its local declarations and its body
// (which must end with 0x0b).
func code(locals []byte, body ...byte) []byte {
	e := cat(locals, body)
	return cat(uleb(uint64(len(e))), e)
}

// noLocals is an empty list of local declarations.
var noLocals = []byte{0}

// Types and bodies every module of the tests uses.
var (
	typeVoid  = []byte{0x60, 0, 0} // () -> ()
	typeI32   = []byte{0x60, 0, 1, 0x7f}
	typeNode  = []byte{0x60, 2, 0x7f, 0x7f, 0}         // (i32, i32) -> ()
	typeABI   = []byte{0x60, 1, 0x7f, 1, 0x7f}         // (i32) -> i32
	bodyNop   = code(noLocals, 0x0b)                   // ()
	bodyOne   = code(noLocals, 0x41, 0x01, 0x0b)       // i32.const 1: the ABI version
	bodyAlloc = code(noLocals, 0x41, 0x80, 0x08, 0x0b) // i32.const 1024: where the input goes
	memory1   = section(5, vec([]byte{0x00, 0x01}))    // one page, no maximum
)

// nodeModule is a module of the runner's ABI (docs/hostabi.md) whose
// entry "run" has the body run, plus extra functions of type () -> ()
// with the bodies extra, and the sections more placed after the others
// of their ids. Types: 0 () -> (), 1 () -> i32, 2 (i32, i32) -> (),
// 3 (i32) -> i32. Functions: 0 corral_abi_version, 1 corral_alloc,
// 2 run, 3… extra.
type nodeModule struct {
	run   []byte   // a code entry of type (i32, i32) -> ()
	extra [][]byte // code entries, of type () -> () unless extraTypes says
	// extraTypes are the types of the first extra functions.
	extraTypes []byte
	tables     []byte   // the table section's content, or nil
	elements   []byte   // the element section's content, or nil
	types      [][]byte // more types, from index 4
}

func (n nodeModule) bytes() []byte {
	types := append([][]byte{typeVoid, typeI32, typeNode, typeABI}, n.types...)
	funcs := [][]byte{{1}, {3}, {2}}
	bodies := [][]byte{bodyOne, bodyAlloc, n.run}
	for i, e := range n.extra {
		ti := byte(0)
		if i < len(n.extraTypes) {
			ti = n.extraTypes[i]
		}
		funcs = append(funcs, []byte{ti})
		bodies = append(bodies, e)
	}
	secs := [][]byte{section(1, vec(types...)), section(3, vec(funcs...))}
	if n.tables != nil {
		secs = append(secs, section(4, n.tables))
	}
	secs = append(secs, memory1, section(7, vec(
		cat(str("memory"), []byte{2, 0}),
		cat(str("corral_abi_version"), []byte{0, 0}),
		cat(str("corral_alloc"), []byte{0, 1}),
		cat(str("run"), []byte{0, 2}))))
	if n.elements != nil {
		secs = append(secs, section(9, n.elements))
	}
	secs = append(secs, section(10, vec(bodies...)))
	return wasmBinary(secs...)
}
