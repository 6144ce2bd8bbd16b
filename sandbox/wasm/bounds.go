package wasm

import "fmt"

// ModuleBounds bound the shape of a module. The runner checks a module
// against them before wazero sees it, reading only its bytes: wazero
// allocates for what a module declares (a count of locals, of functions,
// of table elements) and compiles in time that grows faster than the
// module (with the nesting of blocks, the values an instruction moves),
// and it neither bounds these nor stops compiling when a context ends.
// A module past a bound is refused with a Validation error naming the
// bound, the section and the function. Zero fields take the defaults of
// DefaultModuleBounds; docs/sandbox.md gives what each holds.
type ModuleBounds struct {
	// Functions bounds the functions, imported and defined.
	Functions int `json:"max_functions"`
	// Types bounds the function types.
	Types int `json:"max_types"`
	// Imports and Exports bound the imports and the exports.
	Imports int `json:"max_imports"`
	Exports int `json:"max_exports"`
	// Globals bounds the globals, imported and defined.
	Globals int `json:"max_globals"`
	// Tables bounds the tables, imported and defined.
	Tables int `json:"max_tables"`
	// TableElements bounds the elements of the tables together (each at
	// its minimum, or at its maximum if the code grows it) and, on their
	// own, the entries of the element segments together.
	TableElements int `json:"max_table_elements"`
	// Segments bounds the data and element segments together.
	Segments int `json:"max_segments"`
	// FunctionBytes bounds the size of one function's code.
	FunctionBytes int `json:"max_function_bytes"`
	// Locals bounds one function's locals, its parameters included.
	Locals int `json:"max_locals"`
	// Nesting bounds how deep one function's blocks, loops and ifs nest.
	Nesting int `json:"max_nesting"`
	// FunctionValues bounds the values one function's instructions move
	// on the operand stack (docs/sandbox.md says how they are counted).
	FunctionValues int `json:"max_function_values"`
	// CodeValues bounds the locals and the values of every function of
	// the module, summed.
	CodeValues int `json:"max_code_values"`
	// BranchPairs bounds the pairs of control instructions (block, loop,
	// if, else, br, br_if, br_table) within one function, summed over the
	// module: wazero's compiler takes time in proportion to them.
	BranchPairs int `json:"max_branch_pairs"`
}

// DefaultModuleBounds returns the bounds a zero field of ModuleBounds
// takes.
func DefaultModuleBounds() ModuleBounds {
	return ModuleBounds{
		Functions:      1 << 17,
		Types:          1 << 14,
		Imports:        1 << 12,
		Exports:        1 << 14,
		Globals:        1 << 14,
		Tables:         1 << 6,
		TableElements:  1 << 18,
		Segments:       1 << 18,
		FunctionBytes:  1 << 20,
		Locals:         1 << 14,
		Nesting:        1 << 13,
		FunctionValues: 1 << 18,
		CodeValues:     1 << 25,
		BranchPairs:    1 << 28,
	}
}

// withDefaults fills the zero fields.
func (b ModuleBounds) withDefaults() ModuleBounds {
	d := DefaultModuleBounds()
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&b.Functions, d.Functions)
	fill(&b.Types, d.Types)
	fill(&b.Imports, d.Imports)
	fill(&b.Exports, d.Exports)
	fill(&b.Globals, d.Globals)
	fill(&b.Tables, d.Tables)
	fill(&b.TableElements, d.TableElements)
	fill(&b.Segments, d.Segments)
	fill(&b.FunctionBytes, d.FunctionBytes)
	fill(&b.Locals, d.Locals)
	fill(&b.Nesting, d.Nesting)
	fill(&b.FunctionValues, d.FunctionValues)
	fill(&b.CodeValues, d.CodeValues)
	fill(&b.BranchPairs, d.BranchPairs)
	return b
}

// validate refuses a negative bound.
func (b ModuleBounds) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"max_functions", b.Functions}, {"max_types", b.Types}, {"max_imports", b.Imports},
		{"max_exports", b.Exports}, {"max_globals", b.Globals}, {"max_tables", b.Tables},
		{"max_table_elements", b.TableElements}, {"max_segments", b.Segments},
		{"max_function_bytes", b.FunctionBytes}, {"max_locals", b.Locals}, {"max_nesting", b.Nesting},
		{"max_function_values", b.FunctionValues}, {"max_code_values", b.CodeValues},
		{"max_branch_pairs", b.BranchPairs}} {
		if f.v < 0 {
			return fmt.Errorf("%s must be >= 0, got %d", f.name, f.v)
		}
	}
	return nil
}

// bounds is what precheck holds a module to: the module bounds with their
// defaults, the module's size, and the memory its tables may reserve.
type bounds struct {
	ModuleBounds
	moduleBytes int64
	memoryBytes int64
}

// tableElementBytes is what one element of a table that the code grows
// costs the memory limit. wazero keeps a table as a slice of 8-byte
// references and grows it by append: while a growth copies, the old
// array and the new one, whose capacity append rounds up by as much as a
// quarter, are both held, so a table at its maximum can briefly hold
// about two and a half times its size. Three times covers it.
const tableElementBytes = 24

// tableShape is a table's declared limits.
type tableShape struct {
	min, max uint32
	hasMax   bool
	grownBy  int // a function that grows it, or -1
}

// moduleShape is what precheck measured of a module, each count as the
// bounds count it.
type moduleShape struct {
	functions, types, imports, exports, globals, segments int
	tableElements, elementEntries                         uint64
	maxFunctionBytes, maxLocals, maxNesting               int
	maxFunctionValues, codeValues                         uint64
	branchPairs                                           uint64
	tables                                                []tableShape
	// tableBytes is what the tables the code grows reserve of the memory
	// limit, tableElementBytes for each element of their maximum.
	tableBytes uint64
}
