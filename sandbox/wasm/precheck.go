package wasm

import "github.com/corral-rt/corral/fault"

// precheck checks bin against b before wazero decodes it. It reads the
// bytes only, never panics, and allocates in proportion to a count only
// once the count has passed its bound and fits the bytes left. A module
// wazero compiles with its default features passes under bounds it stays
// within, unless its code grows a table that declares no maximum; a
// module wazero refuses, precheck may refuse too (an unknown opcode, a
// section out of order, a truncated one). Errors are Validation, or a
// memory_bytes *sandbox.LimitError (Node unset) wrapped in a *memoryError
// for a table whose growth could pass memory_bytes.
func precheck(bin []byte, b bounds) error {
	_, err := inspect(bin, b)
	return err
}

// inspect is precheck returning what it measured.
func inspect(bin []byte, b bounds) (moduleShape, error) {
	c := &checker{b: b, bin: bin}
	err := c.module()
	if err == nil {
		err = c.checkTables()
	}
	return c.shape, err
}

// checker reads one module.
type checker struct {
	b       bounds
	bin     []byte
	shape   moduleShape
	section string // the section being read, for errors

	types         []typeShape
	funcTypes     []uint32 // the type of each function, imported first
	importedFuncs int
	codeEntries   int
	sawNames      bool
	walk          bodyWalk // reused by every function
}

// Section ids.
const (
	secCustom = iota
	secType
	secImport
	secFunction
	secTable
	secMemory
	secGlobal
	secExport
	secStart
	secElement
	secCode
	secData
	secDataCount
)

var sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "data count"}

func (c *checker) fail(format string, args ...any) error {
	where := "check the module: "
	if c.section != "" {
		where += c.section + " section: "
	}
	return fault.New(fault.Validation, "", where+format, args...)
}

func (c *checker) malformed(at int) error { return c.fail("malformed at byte %d", at) }

// over is the error of a count past its bound.
func (c *checker) over(what string, n uint64, bound string, max int) error {
	return c.fail("%d %s, more than %s (%d)", n, what, bound, max)
}

func (c *checker) module() error {
	if int64(len(c.bin)) > c.b.moduleBytes {
		return c.fail("the module is %d bytes, more than max_module_bytes (%d)", len(c.bin), c.b.moduleBytes)
	}
	if len(c.bin) < 8 || string(c.bin[:4]) != "\x00asm" || string(c.bin[4:8]) != "\x01\x00\x00\x00" {
		return c.fail("not a WebAssembly module (version 1)")
	}
	r := reader{buf: c.bin, pos: 8}
	last := 0
	for r.left() > 0 {
		c.section = ""
		at := r.pos
		id, _ := r.byte()
		size, ok := r.u32()
		if !ok || uint64(size) > uint64(r.left()) {
			return c.malformed(at)
		}
		if int(id) >= len(sectionNames) {
			return c.fail("section id %d at byte %d is not one wazero enables", id, at)
		}
		if !sectionOrder(int(id), &last) {
			return c.fail("%s section at byte %d out of order", sectionNames[id], at)
		}
		c.section = sectionNames[id]
		sec := reader{buf: c.bin[:r.pos+int(size)], pos: r.pos}
		if err := c.sectionBody(int(id), &sec); err != nil {
			return err
		}
		if sec.left() != 0 {
			return c.fail("%d bytes left at its end", sec.left())
		}
		r.pos = sec.pos
	}
	c.section = ""
	if c.codeEntries != len(c.funcTypes)-c.importedFuncs {
		return c.fail("%d functions declared, %d bodies", len(c.funcTypes)-c.importedFuncs, c.codeEntries)
	}
	return nil
}

// sectionOrder is wazero's rule: custom sections anywhere, the data count
// section after the element section and before the code section, the
// others in increasing order of their ids.
func sectionOrder(id int, last *int) bool {
	switch {
	case id == secCustom:
		return true
	case id == secDataCount:
		ok := *last <= secElement
		*last = id
		return ok
	case *last == secDataCount:
		*last = id
		return id >= secCode
	}
	ok := id > *last
	*last = id
	return ok
}

func (c *checker) sectionBody(id int, r *reader) error {
	switch id {
	case secCustom:
		return c.custom(r)
	case secType:
		return c.typeSection(r)
	case secImport:
		return c.importSection(r)
	case secFunction:
		return c.functionSection(r)
	case secTable:
		return c.tableSection(r)
	case secMemory:
		return c.memorySection(r)
	case secGlobal:
		return c.globalSection(r)
	case secExport:
		return c.exportSection(r)
	case secStart, secDataCount:
		if _, ok := r.u32(); !ok {
			return c.malformed(r.pos)
		}
		return nil
	case secElement:
		return c.elementSection(r)
	case secCode:
		return c.codeSection(r)
	case secData:
		return c.dataSection(r)
	}
	return nil
}

// count reads the length of a vector whose items take at least one byte
// each, and checks it against the bytes left.
func (c *checker) count(r *reader) (uint32, error) {
	at := r.pos
	n, ok := r.u32()
	if !ok || uint64(n) > uint64(r.left()) {
		return 0, c.malformed(at)
	}
	return n, nil
}

// name skips a name: a length and its bytes.
func (c *checker) name(r *reader) error {
	at := r.pos
	n, ok := r.u32()
	if !ok || !r.skip(uint64(n)) {
		return c.malformed(at)
	}
	return nil
}

func (c *checker) typeSection(r *reader) error {
	n, err := c.count(r)
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		members := uint32(1)
		if len(r.buf) > r.pos && r.buf[r.pos] == 0x4e { // a recursive group, as wazero reads one
			r.pos++
			if members, err = c.count(r); err != nil {
				return err
			}
		}
		for j := uint32(0); j < members; j++ {
			if len(c.types) >= c.b.Types {
				return c.over("types", uint64(len(c.types))+1, "max_types", c.b.Types)
			}
			t, err := c.funcType(r)
			if err != nil {
				return err
			}
			c.types = append(c.types, t)
		}
	}
	c.shape.types = len(c.types)
	return nil
}

func (c *checker) funcType(r *reader) (typeShape, error) {
	at := r.pos
	if b, ok := r.byte(); !ok || b != 0x60 {
		return typeShape{}, c.malformed(at)
	}
	params, err := c.valueTypes(r)
	if err != nil {
		return typeShape{}, err
	}
	results, err := c.valueTypes(r)
	return typeShape{params: params, results: results}, err
}

// valueTypes reads a vector of value types and returns its length.
func (c *checker) valueTypes(r *reader) (uint32, error) {
	at := r.pos
	n, err := c.count(r)
	if err != nil {
		return 0, err
	}
	for range n {
		if !r.valueType() {
			return 0, c.malformed(at)
		}
	}
	return n, nil
}

func (c *checker) importSection(r *reader) error {
	n, err := c.count(r)
	if err != nil {
		return err
	}
	if int(n) > c.b.Imports {
		return c.over("imports", uint64(n), "max_imports", c.b.Imports)
	}
	c.shape.imports = int(n)
	for range n {
		at := r.pos
		if err := c.name(r); err != nil {
			return err
		}
		if err := c.name(r); err != nil {
			return err
		}
		kind, _ := r.byte()
		ok := true
		switch kind {
		case 0: // a function
			var ti uint32
			if ti, ok = r.u32(); ok {
				if err := c.addFunction(ti); err != nil {
					return err
				}
				c.importedFuncs++
			}
		case 1:
			err = c.table(r)
		case 2:
			ok = limits(r)
		case 3:
			err = c.addGlobal(r, false)
		default: // tags need exception handling, which is not enabled
			ok = false
		}
		if err != nil {
			return err
		}
		if !ok {
			return c.malformed(at)
		}
	}
	return nil
}

// addFunction adds a function of type ti. A type index out of range is
// refused here: wazero validates a call before it checks the type of the
// function called, and indexes its types with it (a panic).
func (c *checker) addFunction(ti uint32) error {
	if total := len(c.funcTypes) + 1; total > c.b.Functions {
		return c.over("functions", uint64(total), "max_functions", c.b.Functions)
	}
	if int64(ti) >= int64(len(c.types)) {
		return c.fail("function %d has type %d, of %d types", len(c.funcTypes), ti, len(c.types))
	}
	c.funcTypes = append(c.funcTypes, ti)
	return nil
}

func (c *checker) functionSection(r *reader) error {
	n, err := c.count(r)
	if err != nil {
		return err
	}
	if total := len(c.funcTypes) + int(n); total > c.b.Functions {
		return c.over("functions", uint64(total), "max_functions", c.b.Functions)
	}
	for range n {
		ti, ok := r.u32()
		if !ok {
			return c.malformed(r.pos)
		}
		if err := c.addFunction(ti); err != nil {
			return err
		}
	}
	c.shape.functions = len(c.funcTypes)
	return nil
}

// limits skips the limits of a memory or a table.
func limits(r *reader) bool {
	flag, ok := r.byte()
	if !ok || flag > 3 {
		return false
	}
	if _, ok = r.u32(); ok && flag&1 != 0 {
		_, ok = r.u32()
	}
	return ok
}

func (c *checker) tableSection(r *reader) error {
	n, err := c.count(r)
	if err != nil {
		return err
	}
	for range n {
		if err := c.table(r); err != nil {
			return err
		}
	}
	return nil
}

// table reads a table type (imported or defined), as wazero reads one:
// an optional initializer prefix, a reference type, limits, and the
// initializer.
func (c *checker) table(r *reader) error {
	at := r.pos
	if len(c.shape.tables) >= c.b.Tables {
		return c.over("tables", uint64(len(c.shape.tables))+1, "max_tables", c.b.Tables)
	}
	b, ok := r.byte()
	init := ok && b == 0x40
	if init {
		if z, ok2 := r.byte(); !ok2 || z != 0 {
			return c.malformed(at)
		}
		b, ok = r.byte()
	}
	if ok && (b == refNullable || b == refNonNullable) {
		ok = r.heapType()
	}
	flag, ok2 := r.byte()
	if !ok || !ok2 || flag > 3 {
		return c.malformed(at)
	}
	t := tableShape{grownBy: -1, hasMax: flag&1 != 0}
	if t.min, ok = r.u32(); ok && t.hasMax {
		t.max, ok = r.u32()
	}
	if ok && init {
		ok = r.constExpr()
	}
	if !ok {
		return c.malformed(at)
	}
	c.shape.tables = append(c.shape.tables, t)
	return nil
}

func (c *checker) memorySection(r *reader) error {
	n, err := c.count(r)
	if err != nil {
		return err
	}
	for range n {
		if !limits(r) {
			return c.malformed(r.pos)
		}
	}
	return nil
}

func (c *checker) globalSection(r *reader) error {
	n, err := c.count(r)
	if err != nil {
		return err
	}
	if total := c.shape.globals + int(n); total > c.b.Globals {
		return c.over("globals", uint64(total), "max_globals", c.b.Globals)
	}
	for range n {
		if err := c.addGlobal(r, true); err != nil {
			return err
		}
	}
	return nil
}

// addGlobal reads a global's type, and its initializer if it is defined.
func (c *checker) addGlobal(r *reader, defined bool) error {
	at := r.pos
	if c.shape.globals++; c.shape.globals > c.b.Globals {
		return c.over("globals", uint64(c.shape.globals), "max_globals", c.b.Globals)
	}
	if !r.valueType() {
		return c.malformed(at)
	}
	if _, ok := r.byte(); !ok || (defined && !r.constExpr()) { // mutability, initializer
		return c.malformed(at)
	}
	return nil
}

func (c *checker) exportSection(r *reader) error {
	n, err := c.count(r)
	if err != nil {
		return err
	}
	if int(n) > c.b.Exports {
		return c.over("exports", uint64(n), "max_exports", c.b.Exports)
	}
	c.shape.exports = int(n)
	for range n {
		at := r.pos
		if err := c.name(r); err != nil {
			return err
		}
		kind, ok := r.byte()
		if !ok || kind > 4 {
			return c.malformed(at)
		}
		if _, ok := r.u32(); !ok {
			return c.malformed(at)
		}
	}
	return nil
}
