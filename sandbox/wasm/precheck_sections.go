package wasm

import (
	"fmt"

	"github.com/corral-rt/corral/sandbox"
)

// The sections whose entries the precheck counts one by one (code,
// elements, data, names) and the table check that needs the code read.

func (c *checker) codeSection(r *reader) error {
	n, err := c.count(r)
	if err != nil {
		return err
	}
	c.codeEntries = int(n)
	w := &c.walk
	w.types, w.funcTypes = c.types, c.funcTypes
	w.maxNesting = c.b.Nesting
	for i := range n {
		if err := c.function(r, c.importedFuncs+int(i)); err != nil {
			return err
		}
	}
	return nil
}

// function reads one code entry, of function fn: its size, its locals,
// then every instruction.
func (c *checker) function(r *reader, fn int) error {
	at := r.pos
	size, ok := r.u32()
	if !ok || uint64(size) > uint64(r.left()) {
		return c.malformed(at)
	}
	if int64(size) > int64(c.b.FunctionBytes) {
		return c.fail("function %d: %d bytes, more than max_function_bytes (%d)", fn, size, c.b.FunctionBytes)
	}
	c.shape.maxFunctionBytes = max(c.shape.maxFunctionBytes, int(size))
	entry := reader{buf: r.buf[:r.pos+int(size)], pos: r.pos}
	r.pos += int(size)
	var t typeShape
	if fn < len(c.funcTypes) && int(c.funcTypes[fn]) < len(c.types) {
		t = c.types[c.funcTypes[fn]]
	}
	locals, err := c.locals(&entry, fn, t.params)
	if err != nil {
		return err
	}
	budget := uint64(c.b.CodeValues) - c.shape.codeValues
	if locals > budget {
		return c.fail("function %d: %d locals and values in all, more than max_code_values (%d)", fn,
			c.shape.codeValues+locals, c.b.CodeValues)
	}
	w := &c.walk
	w.r = entry
	w.nesting, w.values, w.branches, w.pairs = 0, 0, 0, 0
	w.maxValues = min(uint64(c.b.FunctionValues), budget-locals)
	w.maxPairs = uint64(c.b.BranchPairs) - c.shape.branchPairs
	w.tables, w.fn = c.shape.tables, fn
	if werr := w.walk(t.results); werr != nil {
		return c.walkError(fn, werr)
	}
	c.shape.maxNesting = max(c.shape.maxNesting, w.nesting)
	c.shape.maxFunctionValues = max(c.shape.maxFunctionValues, w.values)
	c.shape.codeValues += locals + w.values
	c.shape.branchPairs += w.pairs
	return nil
}

// locals reads a function's local declarations and returns its locals,
// params included. The sum is checked at each declaration, before it
// could overflow.
func (c *checker) locals(r *reader, fn int, params uint32) (uint64, error) {
	at := r.pos
	groups, ok := r.u32()
	if !ok || uint64(groups) > uint64(r.left()) {
		return 0, c.malformed(at)
	}
	n := uint64(params)
	for i := uint32(0); i <= groups; i++ { // the params, then each declaration
		if n > uint64(c.b.Locals) {
			return 0, c.fail("function %d: %d locals or more, parameters included, more than max_locals (%d)",
				fn, n, c.b.Locals)
		}
		if i == groups {
			break
		}
		k, ok := r.u32()
		if !ok || !r.valueType() {
			return 0, c.malformed(at)
		}
		n += uint64(k) // at most 2^32 more than the bound: no overflow
	}
	c.shape.maxLocals = max(c.shape.maxLocals, int(n))
	return n, nil
}

func (c *checker) walkError(fn int, e *walkError) error {
	switch e.limit {
	case "nesting":
		return c.fail("function %d: blocks nest deeper than max_nesting (%d) at byte %d of its body", fn,
			c.b.Nesting, e.at)
	case "pairs":
		return c.fail("function %d: the module's pairs of control instructions pass max_branch_pairs (%d) at byte %d of its body",
			fn, c.b.BranchPairs, e.at)
	case "values":
		if c.walk.values > uint64(c.b.FunctionValues) {
			return c.fail("function %d: more than max_function_values (%d) values at byte %d of its body", fn,
				c.b.FunctionValues, e.at)
		}
		return c.fail("function %d: the module's locals and values pass max_code_values (%d) at byte %d of its body",
			fn, c.b.CodeValues, e.at)
	}
	return c.fail("function %d: %s at byte %d of its body", fn, e.what, e.at)
}

// custom reads a custom section: its name and, for the name section,
// what wazero decodes of it.
func (c *checker) custom(r *reader) error {
	at := r.pos
	n, ok := r.u32()
	name, ok2 := r.bytes(uint64(n))
	if !ok || !ok2 {
		return c.malformed(at)
	}
	if string(name) != "name" {
		r.pos = len(r.buf)
		return nil
	}
	if c.sawNames {
		return c.fail("a second name section")
	}
	c.sawNames = true
	return c.names(r)
}

// names reads the name section as wazero does: subsections until their
// declared sizes add up to the section's, each read from where the one
// before ended (not from where its size says), the module's name, the
// functions' names and their locals' decoded, the others skipped. A name
// map needs at least two bytes an entry, names at most max_functions
// functions and max_locals locals of each.
func (c *checker) names(r *reader) error {
	limit := uint64(r.left())
	atModuleEnd := len(r.buf) == len(c.bin)
	for limit > 0 {
		if r.left() == 0 && atModuleEnd {
			return nil // wazero stops at the end of the module
		}
		at := r.pos
		id, ok := r.byte()
		size, n, ok2 := r.u32len()
		if !ok || !ok2 {
			return c.malformed(at)
		}
		limit -= 1 + uint64(n) // wraps as wazero's does
		var err error
		switch id {
		case 0:
			err = c.name(r)
		case 1:
			err = c.nameMap(r, c.b.Functions, "functions", "max_functions")
		case 2:
			err = c.localNames(r)
		default:
			if !r.skip(uint64(size)) {
				err = c.malformed(at)
			}
		}
		if err != nil {
			return err
		}
		limit -= uint64(size)
	}
	return nil
}

func (c *checker) nameMap(r *reader, bound int, what, boundName string) error {
	at := r.pos
	n, ok := r.u32()
	if !ok || uint64(n) > uint64(r.left())/2 {
		return c.malformed(at)
	}
	if int64(n) > int64(bound) {
		return c.fail("names for %d %s, more than %s (%d)", n, what, boundName, bound)
	}
	for range n {
		if _, ok := r.u32(); !ok {
			return c.malformed(at)
		}
		if err := c.name(r); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) localNames(r *reader) error {
	at := r.pos
	n, ok := r.u32()
	if !ok || uint64(n) > uint64(r.left())/2 {
		return c.malformed(at)
	}
	if int64(n) > int64(c.b.Functions) {
		return c.fail("local names for %d functions, more than max_functions (%d)", n, c.b.Functions)
	}
	for range n {
		if _, ok := r.u32(); !ok {
			return c.malformed(at)
		}
		if err := c.nameMap(r, c.b.Locals, "locals", "max_locals"); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) addSegments(n uint32) error {
	if total := c.shape.segments + int(n); total > c.b.Segments {
		return c.over("data and element segments", uint64(total), "max_segments", c.b.Segments)
	}
	c.shape.segments += int(n)
	return nil
}

func (c *checker) elementSection(r *reader) error {
	n, err := c.count(r)
	if err != nil {
		return err
	}
	if err := c.addSegments(n); err != nil {
		return err
	}
	for i := range n {
		if err := c.elementSegment(r, i); err != nil {
			return err
		}
	}
	return nil
}

// elementSegment reads one element segment in each of its eight
// encodings.
func (c *checker) elementSegment(r *reader, i uint32) error {
	at := r.pos
	prefix, ok := r.u32()
	if !ok || prefix > 7 {
		return c.malformed(at)
	}
	if prefix&2 != 0 && prefix&1 == 0 { // an explicit table index
		_, ok = r.u32()
	}
	if ok && prefix&1 == 0 { // active: an offset
		ok = r.constExpr()
	}
	exprs := prefix&4 != 0
	if ok && prefix&3 != 0 { // an element kind (0) or a reference type
		var b byte
		b, ok = r.byte()
		if ok && exprs {
			switch b {
			case 0x70, 0x6f:
			case refNullable, refNonNullable:
				ok = r.heapType()
			default:
				ok = false
			}
		}
	}
	if !ok {
		return c.malformed(at)
	}
	n, err := c.count(r)
	if err != nil {
		return err
	}
	if c.shape.elementEntries += uint64(n); c.shape.elementEntries > uint64(c.b.TableElements) {
		return c.fail("element %d: %d entries in all, more than max_table_elements (%d)", i,
			c.shape.elementEntries, c.b.TableElements)
	}
	for range n {
		if exprs {
			ok = r.constExpr()
		} else {
			_, ok = r.u32()
		}
		if !ok {
			return c.malformed(at)
		}
	}
	return nil
}

func (c *checker) dataSection(r *reader) error {
	n, err := c.count(r)
	if err != nil {
		return err
	}
	if err := c.addSegments(n); err != nil {
		return err
	}
	for range n {
		at := r.pos
		prefix, ok := r.u32()
		if ok && prefix == 2 {
			_, ok = r.u32()
		}
		if ok && prefix != 1 {
			ok = prefix <= 2 && r.constExpr()
		}
		var size uint32
		if ok {
			size, ok = r.u32()
		}
		if !ok || !r.skip(uint64(size)) {
			return c.malformed(at)
		}
	}
	return nil
}

// checkTables holds the tables to max_table_elements, and a table the
// code grows to memory_bytes: it needs a declared maximum, and reserves
// tableElementBytes for each element of it.
func (c *checker) checkTables() error {
	c.section = "table"
	var elements uint64
	for i, t := range c.shape.tables {
		if t.grownBy < 0 {
			elements += uint64(t.min)
			continue
		}
		if !t.hasMax {
			return c.memory("table %d has no maximum, and function %d grows it", i, t.grownBy)
		}
		elements += uint64(t.max)
		c.shape.tableBytes += uint64(t.max) * tableElementBytes
	}
	c.shape.tableElements = elements
	if elements > uint64(c.b.TableElements) {
		return c.fail("%d elements in all, more than max_table_elements (%d)", elements, c.b.TableElements)
	}
	if c.shape.tableBytes > uint64(c.b.memoryBytes) {
		return c.memory("the tables the code grows reserve %d bytes, %d an element", c.shape.tableBytes, tableElementBytes)
	}
	return nil
}

// memory is a memory_bytes LimitError, explained.
func (c *checker) memory(format string, args ...any) error {
	return &memoryError{why: "check the module: " + c.section + " section: " + fmt.Sprintf(format, args...),
		limit: &sandbox.LimitError{Limit: sandbox.LimitMemory, Max: c.b.memoryBytes}}
}

// memoryError is a module refused for the memory it could take: why,
// and the LimitError (whose node the runner sets).
type memoryError struct {
	why   string
	limit *sandbox.LimitError
}

func (e *memoryError) Error() string { return e.why + ": " + e.limit.Error() }
func (e *memoryError) Unwrap() error { return e.limit }
