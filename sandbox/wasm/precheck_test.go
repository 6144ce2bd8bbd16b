package wasm

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/wasm/wasmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
)

// generous bounds let every count through, for tests of the decoding.
func generous() bounds {
	const n = math.MaxInt32
	return bounds{ModuleBounds: ModuleBounds{n, n, n, n, n, n, n, n, n, n, n, n, n, n},
		moduleBytes: math.MaxInt64, memoryBytes: math.MaxInt64}
}

func defaults() bounds {
	return bounds{ModuleBounds: ModuleBounds{}.withDefaults(), moduleBytes: DefaultMaxModuleBytes,
		memoryBytes: sandbox.DefaultLimits().MemoryBytes}
}

// opcodeModule is a module whose function 0 runs body after an
// unreachable (so that any operand an instruction takes is there), with
// one of everything an immediate can name: a type, a function, a local,
// a mutable global, a funcref table, a memory, a data segment (and the
// data count section) and a declarative element segment of function 0.
func opcodeModule(body []byte) []byte {
	return wasmBinary(
		section(1, vec(typeVoid)),
		section(3, vec([]byte{0})),
		section(4, vec([]byte{0x70, 0x01, 0x01, 0x01})), // a maximum: table.grow needs one
		memory1,
		section(6, vec([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b})),
		section(9, vec([]byte{0x03, 0x00, 0x01, 0x00})),
		section(12, uleb(1)),
		section(10, vec(code([]byte{1, 1, 0x7f}, cat([]byte{0x00}, body, []byte{0x1a, 0x0b})...))),
		section(11, vec([]byte{0x01, 0x00})),
	)
}

// immediatesFor are zero immediates of each kind of opcode the walk
// knows (none for an opcode it does not).
func immediatesFor(op byte) []byte {
	switch opcodes[op] {
	case opIndex, opCall, opI32, opI64:
		return []byte{0}
	case opTwoIndex, opBrTable, opMemarg:
		return []byte{0, 0}
	case opF32:
		return make([]byte, 4)
	case opF64:
		return make([]byte, 8)
	case opRefNull:
		return []byte{0x70}
	case opSelectT:
		return []byte{1, 0x7f}
	}
	return nil
}

func vectorImmediates(sub byte) []byte {
	switch vectorOps[sub] {
	case vecMemarg:
		return []byte{0, 0}
	case vecMemargLane:
		return []byte{0, 0, 0}
	case vecLane:
		return []byte{0}
	case vec16Bytes:
		return make([]byte, 16)
	}
	return nil
}

// compiles reports whether wazero compiles bin with its default
// features, as the runner's engine does.
func compiles(t testing.TB, wz wazero.Runtime, bin []byte) bool {
	t.Helper()
	c, err := wz.CompileModule(context.Background(), bin)
	if err == nil {
		_ = c.Close(context.Background())
	}
	return err == nil
}

// For every opcode (each single byte, each 0xfc and each 0xfd one), the
// walk accepts the instruction exactly when wazero compiles it: the walk
// knows every instruction of the enabled features and the size of its
// immediates, and no other.
func TestPrecheckOpcodesAgreeWithWazero(t *testing.T) {
	wz := wazero.NewRuntimeWithConfig(context.Background(), wazero.NewRuntimeConfigInterpreter())
	defer wz.Close(context.Background())
	accepted := 0
	check := func(name string, instr []byte) {
		bin := opcodeModule(instr)
		want := compiles(t, wz, bin)
		if want {
			accepted++
		}
		err := precheck(bin, generous())
		assert.Equal(t, want, err == nil, "%s (% x): wazero compiles it: %v; precheck: %v", name, instr, want, err)
	}
	for op := 0; op < 256; op++ {
		var instr []byte
		switch op {
		case 0x02, 0x03, 0x04: // block, loop, if: with their end
			instr = []byte{byte(op), 0x40, 0x0b}
		case 0x05: // else: inside an if
			instr = []byte{0x04, 0x40, 0x05, 0x0b}
		case 0x0b, 0xfc, 0xfd: // the function's end; prefixes, below
			continue
		default:
			instr = cat([]byte{byte(op)}, immediatesFor(byte(op)))
		}
		check("opcode "+hexByte(byte(op)), instr)
	}
	for sub := 0; sub < 40; sub++ {
		n := 0
		if sub <= miscLast {
			n = miscIndexes[sub]
		}
		check("0xfc "+hexByte(byte(sub)), cat([]byte{0xfc}, uleb(uint64(sub)), make([]byte, n)))
	}
	for sub := 0; sub < 256; sub++ {
		check("0xfd "+hexByte(byte(sub)), cat([]byte{0xfd, byte(sub)}, vectorImmediates(byte(sub))))
	}
	// 182 single-byte instructions (end aside), 18 of 0xfc, 236 of 0xfd.
	assert.Equal(t, 182+18+236, accepted, "instructions wazero compiles")
}

// small bounds keep whatever passes them quick for wazero to compile.
func small() bounds {
	return bounds{ModuleBounds: ModuleBounds{Functions: 64, Types: 64, Imports: 64, Exports: 64, Globals: 64,
		Tables: 8, TableElements: 4096, Segments: 256, FunctionBytes: 64 << 10, Locals: 1024, Nesting: 256,
		FunctionValues: 1 << 16, CodeValues: 1 << 18, BranchPairs: 1 << 20},
		moduleBytes: 1 << 20, memoryBytes: 64 << 20}
}

// compileNoPanic compiles bin with wazero's compiler, failing t on a
// panic.
func compileNoPanic(t *testing.T, wz wazero.Runtime, bin []byte) (ok bool) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("wazero panics compiling % x: %v", bin, p)
		}
	}()
	return compiles(t, wz, bin)
}

// Any bytes as a module: precheck never panics and always ends, under
// any bounds; what it accepts under small bounds, wazero compiles (or
// refuses) without a panic. The same bytes as a function's instructions,
// in a module of one of everything: what wazero compiles, precheck
// accepts. (wazero is never handed bytes precheck refused: a count it
// would allocate for could take the process down.)
func FuzzPrecheck(f *testing.F) {
	wz := wazero.NewRuntime(context.Background())
	f.Cleanup(func() { _ = wz.Close(context.Background()) })
	fixtures, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "wasm", "wat", "*.wasm"))
	for _, p := range fixtures {
		if bin, err := os.ReadFile(p); err == nil {
			f.Add(bin)
		}
	}
	for _, body := range [][]byte{
		{0x02, 0x40, 0x41, 0x00, 0x0d, 0x00, 0x0b},
		{0xfd, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		{0xfc, 0x0f, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00},
		{0x1c, 0x01, 0x63, 0x70, 0xd0, 0x6f, 0xd2, 0x00},
	} {
		f.Add(body)
		f.Add(opcodeModule(body))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = precheck(data, generous())
		_ = precheck(data, defaults())
		if precheck(data, small()) == nil {
			compileNoPanic(t, wz, data)
		}
		bin := opcodeModule(data)
		if compileNoPanic(t, wz, bin) {
			require.NoError(t, precheck(bin, generous()), "wazero compiles the instructions % x", data)
		}
	})
}

// boundCase is a module of n items of one kind, for the bound that
// counts them.
type boundCase struct {
	bound  string // the setting
	field  func(b *ModuleBounds) *int
	module func(n int) []byte
	n      int
}

func boundCases() []boundCase {
	fn := func(bodies ...[]byte) []byte {
		return wasmBinary(section(1, vec(typeVoid)), section(3, vecN(len(bodies), []byte{0})), section(10, vec(bodies...)))
	}
	blocks := func(n int) []byte { // n nested blocks
		var b []byte
		for range n {
			b = append(b, 0x02, 0x40)
		}
		for range n {
			b = append(b, 0x0b)
		}
		return append(b, 0x0b)
	}
	return []boundCase{
		{"max_functions", func(b *ModuleBounds) *int { return &b.Functions }, func(n int) []byte {
			bodies := make([][]byte, n)
			for i := range bodies {
				bodies[i] = bodyNop
			}
			return fn(bodies...)
		}, 10},
		{"max_types", func(b *ModuleBounds) *int { return &b.Types }, func(n int) []byte {
			return wasmBinary(section(1, vecN(n, typeVoid)))
		}, 10},
		{"max_imports", func(b *ModuleBounds) *int { return &b.Imports }, func(n int) []byte {
			return wasmBinary(section(1, vec(typeVoid)), section(2, vecN(n, cat(str("host"), str("f"), []byte{0, 0}))))
		}, 10},
		{"max_exports", func(b *ModuleBounds) *int { return &b.Exports }, func(n int) []byte {
			exports := make([][]byte, n)
			for i := range exports {
				exports[i] = cat(str(string(rune('a'+i))), []byte{0, 0})
			}
			return wasmBinary(section(1, vec(typeVoid)), section(3, vec([]byte{0})), section(7, vec(exports...)),
				section(10, vec(bodyNop)))
		}, 10},
		{"max_globals", func(b *ModuleBounds) *int { return &b.Globals }, func(n int) []byte {
			return wasmBinary(section(6, vecN(n, []byte{0x7f, 0x00, 0x41, 0x00, 0x0b})))
		}, 10},
		{"max_tables", func(b *ModuleBounds) *int { return &b.Tables }, func(n int) []byte {
			return wasmBinary(section(4, vecN(n, []byte{0x70, 0x00, 0x00})))
		}, 10},
		{"max_table_elements", func(b *ModuleBounds) *int { return &b.TableElements }, func(n int) []byte {
			return wasmBinary(section(4, funcTable(n, -1)))
		}, 1000},
		{"max_table_elements", func(b *ModuleBounds) *int { return &b.TableElements }, func(n int) []byte {
			return wasmBinary(section(1, vec(typeVoid)), section(3, vec([]byte{0})),
				section(9, vec(cat([]byte{0x01, 0x00}, vecN(n, []byte{0})))), section(10, vec(bodyNop)))
		}, 1000},
		{"max_segments", func(b *ModuleBounds) *int { return &b.Segments }, func(n int) []byte {
			return wasmBinary(memory1, section(11, vecN(n, []byte{0x01, 0x00})))
		}, 10},
		{"max_function_bytes", func(b *ModuleBounds) *int { return &b.FunctionBytes }, func(n int) []byte {
			body := append(make([]byte, n-2), 0x0b) // nops (0x01) after the locals
			for i := range body[:len(body)-1] {
				body[i] = 0x01
			}
			return fn(code(noLocals, body...))
		}, 100},
		{"max_locals", func(b *ModuleBounds) *int { return &b.Locals }, func(n int) []byte {
			return fn(code(cat([]byte{2, 1, 0x7f}, uleb(uint64(n-1)), []byte{0x7e}), 0x0b))
		}, 1000},
		{"max_nesting", func(b *ModuleBounds) *int { return &b.Nesting }, func(n int) []byte {
			return fn(code(noLocals, blocks(n)...))
		}, 100},
		{"max_function_values", func(b *ModuleBounds) *int { return &b.FunctionValues }, func(n int) []byte {
			return fn(code(noLocals, append(bytesOf(0x01, n-1), 0x0b)...)) // n-1 nops and the end
		}, 100},
		{"max_code_values", func(b *ModuleBounds) *int { return &b.CodeValues }, func(n int) []byte {
			half := n / 2 // two functions, each of one local and half-1 values
			f := code(cat([]byte{1, 1, 0x7f}), append(bytesOf(0x01, half-2), 0x0b)...)
			return fn(f, f)
		}, 100},
		{"max_branch_pairs", func(b *ModuleBounds) *int { return &b.BranchPairs }, func(n int) []byte {
			return fn(code(noLocals, blocks(10)...)) // 10 blocks: 45 pairs
		}, 45},
	}
}

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// Every bound holds exactly: a module with as many items as the bound
// passes, one with more is refused with a Validation error naming the
// bound; wazero compiles the one that passes.
func TestPrecheckBounds(t *testing.T) {
	wz := wazero.NewRuntimeWithConfig(context.Background(), wazero.NewRuntimeConfigInterpreter())
	defer wz.Close(context.Background())
	for _, c := range boundCases() {
		at, past := generous(), generous()
		*c.field(&at.ModuleBounds) = c.n
		*c.field(&past.ModuleBounds) = c.n - 1
		bin := c.module(c.n)
		if c.bound == "max_branch_pairs" {
			past = at
			*c.field(&past.ModuleBounds) = c.n - 1
		}
		assert.NoError(t, precheck(bin, at), "%s at %d", c.bound, c.n)
		err := precheck(bin, past)
		if assert.Error(t, err, "%s at %d", c.bound, c.n-1) {
			assert.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), c.bound)
		}
		assert.True(t, compiles(t, wz, bin), "%s: wazero compiles % x", c.bound, bin)
	}
	// max_module_bytes
	bin := okModule(t)
	b := generous()
	b.moduleBytes = int64(len(bin))
	assert.NoError(t, precheck(bin, b))
	b.moduleBytes--
	assert.ErrorContains(t, precheck(bin, b), "max_module_bytes")
}

// The project's own modules (the Go guests, built here, and every .wat
// fixture) pass the default bounds with room to spare: each measure is
// at most a quarter of its bound. The measures are logged (docs/sandbox.md
// quotes them).
func TestOwnModulesWithinBounds(t *testing.T) {
	builder, err := wasmtest.NewBuilder(t.TempDir())
	require.NoError(t, err)
	mods := map[string][]byte{}
	for _, pkg := range []string{"testdata/wasm/suite", "examples/mixed/guest"} {
		mods[pkg] = builder.Build(t, pkg)
	}
	fixtures, err := filepath.Glob(filepath.Join("..", "..", "testdata", "wasm", "wat", "*.wasm"))
	require.NoError(t, err)
	for _, p := range fixtures {
		bin, err := os.ReadFile(p)
		require.NoError(t, err)
		mods[filepath.Base(p)] = bin
	}
	d := DefaultModuleBounds()
	for name, bin := range mods {
		s, err := inspect(bin, defaults())
		require.NoError(t, err, name)
		t.Logf("%s (%d bytes): %d functions, %d types, %d imports, %d exports, %d globals, %d tables of %d elements, "+
			"%d element entries, %d segments; at most %d bytes, %d locals, nesting %d, %d values in a function; "+
			"%d values, %d branch pairs in all", name, len(bin), s.functions, s.types, s.imports, s.exports, s.globals,
			len(s.tables), s.tableElements, s.elementEntries, s.segments, s.maxFunctionBytes, s.maxLocals, s.maxNesting,
			s.maxFunctionValues, s.codeValues, s.branchPairs)
		for _, m := range []struct {
			bound    string
			got, max uint64
		}{
			{"max_functions", uint64(s.functions), uint64(d.Functions)},
			{"max_types", uint64(s.types), uint64(d.Types)},
			{"max_imports", uint64(s.imports), uint64(d.Imports)},
			{"max_exports", uint64(s.exports), uint64(d.Exports)},
			{"max_globals", uint64(s.globals), uint64(d.Globals)},
			{"max_tables", uint64(len(s.tables)), uint64(d.Tables)},
			{"max_table_elements", max(s.tableElements, s.elementEntries), uint64(d.TableElements)},
			{"max_segments", uint64(s.segments), uint64(d.Segments)},
			{"max_function_bytes", uint64(s.maxFunctionBytes), uint64(d.FunctionBytes)},
			{"max_locals", uint64(s.maxLocals), uint64(d.Locals)},
			{"max_nesting", uint64(s.maxNesting), uint64(d.Nesting)},
			{"max_function_values", s.maxFunctionValues, uint64(d.FunctionValues)},
			{"max_code_values", s.codeValues, uint64(d.CodeValues)},
			{"max_branch_pairs", s.branchPairs, uint64(d.BranchPairs)},
		} {
			assert.LessOrEqual(t, m.got, m.max/4, "%s: %s", name, m.bound)
		}
		assert.Zero(t, s.tableBytes, "%s: no table the code grows", name)
	}
}

// A table the code grows needs a maximum, and reserves 24 bytes of
// memory_bytes for each element of it; a table it does not grow counts
// its minimum against max_table_elements and reserves nothing.
func TestPrecheckTables(t *testing.T) {
	grow := nodeModule{run: growLoop, tables: funcTable(10, 1000)}.bytes()
	b := defaults()
	s, err := inspect(grow, b)
	require.NoError(t, err)
	assert.Equal(t, uint64(1000*tableElementBytes), s.tableBytes)
	assert.Equal(t, uint64(1000), s.tableElements)

	b.memoryBytes = 1000*tableElementBytes - 1
	err = precheck(grow, b)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitMemory, le.Limit)
	assert.Contains(t, err.Error(), "reserve 24000 bytes")

	fixed := nodeModule{run: code(noLocals, 0x0b), tables: funcTable(10, -1)}.bytes()
	s, err = inspect(fixed, defaults())
	require.NoError(t, err)
	assert.Zero(t, s.tableBytes)
	assert.Equal(t, uint64(10), s.tableElements)
}

// The precheck of the suite guest: a read of its bytes, a small part of
// what compiling it costs.
func BenchmarkPrecheck(b *testing.B) {
	builder, err := wasmtest.NewBuilder(b.TempDir())
	require.NoError(b, err)
	bin := builder.Build(b, "testdata/wasm/suite")
	bd := defaults()
	b.SetBytes(int64(len(bin)))
	b.ReportAllocs()
	for b.Loop() {
		if err := precheck(bin, bd); err != nil {
			b.Fatal(err)
		}
	}
}
