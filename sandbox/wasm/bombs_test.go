package wasm

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bomb is a module that makes wazero, unchecked, allocate or compute far
// more than its size, and how a call of it must end.
type bomb struct {
	name   string
	module func() []byte
	limit  string      // the LimitError it must end with, or ""
	kind   *fault.Kind // else the kind it must end with; nil: no error
	text   string      // the error must contain it
	// memory tightens the call's memory_bytes; 0 leaves the test's.
	memory int64
}

// runBody is a code entry of run: locals, then the body.
func runBody(locals []byte, body ...byte) []byte { return code(locals, body...) }

// growLoop grows table 0 by 1000 elements until table.grow fails.
var growLoop = runBody(noLocals,
	0x03, 0x40, // loop
	0xd0, 0x70, 0x41, 0xe8, 0x07, 0xfc, 0x0f, 0x00, // table.grow 0 (ref.null func, 1000)
	0x41, 0x7f, 0x47, 0x0d, 0x00, // br_if 0 while it did not answer -1
	0x0b, 0x0b)

// funcTable is a funcref table with a minimum and, if max >= 0, a
// maximum.
func funcTable(min, max int) []byte {
	if max < 0 {
		return vec(cat([]byte{0x70, 0x00}, uleb(uint64(min))))
	}
	return vec(cat([]byte{0x70, 0x01}, uleb(uint64(min)), uleb(uint64(max))))
}

func bombs() []bomb {
	validation, memory := fault.Validation, sandbox.LimitMemory
	return []bomb{
		{name: "2^28 locals", kind: validation, text: "max_locals", module: func() []byte {
			return nodeModule{run: runBody(cat([]byte{1}, uleb(1<<28), []byte{0x7f}), 0x0b)}.bytes()
		}},
		{name: "300,000 nested blocks", kind: validation, text: "max_nesting", module: func() []byte {
			var b []byte
			for range 300_000 {
				b = append(b, 0x02, 0x40)
			}
			for range 300_000 {
				b = append(b, 0x0b)
			}
			return nodeModule{run: runBody(noLocals, append(b, 0x0b)...)}.bytes()
		}},
		{name: "table.grow loop, no maximum", limit: memory, text: "table 0 has no maximum", module: func() []byte {
			return nodeModule{run: growLoop, tables: funcTable(0, -1)}.bytes()
		}},
		{name: "table.grow loop, maximum past the call's memory_bytes", limit: memory, module: func() []byte {
			return nodeModule{run: growLoop, tables: funcTable(0, 1<<18)}.bytes() // 6 MiB reserved
		}, memory: 4 << 20},
		{name: "table.grow loop up to its maximum", module: func() []byte {
			return nodeModule{run: growLoop, tables: funcTable(0, 1<<18)}.bytes()
		}},
		{name: "a table's minimum", kind: validation, text: "max_table_elements", module: func() []byte {
			return nodeModule{run: runBody(noLocals, 0x0b), tables: funcTable(1<<27, -1)}.bytes() // 1 GiB each call
		}},
		{name: "a huge element segment", kind: validation, text: "max_table_elements", module: func() []byte {
			// passive, funcref, 4 million entries of function 0
			seg := cat([]byte{0x01, 0x00}, vecN(4<<20, []byte{0}))
			return nodeModule{run: runBody(noLocals, 0x0b), elements: vec(seg)}.bytes()
		}},
		{name: "a million functions", kind: validation, text: "max_functions", module: func() []byte {
			extra := make([][]byte, 1<<20)
			for i := range extra {
				extra[i] = bodyNop
			}
			return nodeModule{run: runBody(noLocals, 0x0b), extra: extra}.bytes()
		}},
		{name: "16,384 locals in each of 10,000 functions", kind: validation, text: "max_code_values", module: func() []byte {
			extra := make([][]byte, 10_000)
			for i := range extra {
				extra[i] = code(cat([]byte{1}, uleb(1<<14), []byte{0x7f}), 0x0b)
			}
			return nodeModule{run: runBody(noLocals, 0x0b), extra: extra}.bytes()
		}},
		{name: "100,000 br_if in a row", kind: validation, text: "max_branch_pairs", module: func() []byte {
			b := []byte{0x02, 0x40}
			for range 100_000 {
				b = append(b, 0x41, 0x00, 0x0d, 0x00)
			}
			return nodeModule{run: runBody(noLocals, append(b, 0x0b, 0x0b)...)}.bytes()
		}},
		{name: "100,000 calls of 1,000 results", kind: validation, text: "max_function_values", module: func() []byte {
			results := cat([]byte{0x60, 0}, vecN(1000, []byte{0x7f})) // type 4: () -> (i32 × 1000)
			var b []byte
			for range 100_000 {
				b = append(b, 0x10, 0x03) // call function 3
			}
			wide := code(noLocals, 0x00, 0x0b)
			return nodeModule{run: runBody(noLocals, append(b, 0x00, 0x0b)...), types: [][]byte{results},
				extra: [][]byte{wide}, extraTypes: []byte{4}}.bytes()
		}},
		{name: "an import count past the module's end", kind: validation, text: "malformed", module: func() []byte {
			return wasmBinary(section(2, uleb(1<<32-1)))
		}},
		{name: "a call of a function whose type is out of range", kind: validation, text: "type 48", module: func() []byte {
			return wasmBinary(section(1, vec(typeVoid)), section(3, vec([]byte{0}, []byte{48})),
				section(10, vec(code(noLocals, 0x10, 0x01, 0x0b), bodyNop)))
		}},
	}
}

// okModule is the fixture every next call runs.
func okModule(t *testing.T) []byte {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wasm", "wat", "ok.wasm"))
	require.NoError(t, err)
	return bin
}

// Each bomb ends with its error, allocating little on the way (the
// bytes of the module aside); the process survives and the next call on
// the same runtime succeeds. Unchecked, the 2^28 locals, the table.grow
// loop without a maximum, the calls of 1,000 results and the import count
// end the process out of memory; the nested blocks and the br_if compile
// for minutes; the table's minimum allocates a gigabyte a call; the
// element segment, the functions and the locals, hundreds of megabytes to
// more than a gigabyte; the call of a function of a type out of range
// panics; a table the code grows past the call's memory_bytes grows
// anyway. The growth up to a declared maximum runs as it did.
// REF 9.M1 (a call's memory is held to memory_bytes; the process never dies)
// REF 9.M2 (compute is bounded)
// REF 9.M4 (never a host panic; the next call is unharmed)
func TestModuleBombs(t *testing.T) {
	rt, err := New(Options{Limits: sandbox.Limits{WallTime: time.Minute, MemoryBytes: 32 << 20}})
	require.NoError(t, err)
	defer rt.Close()
	ok := okModule(t)
	for _, b := range bombs() {
		t.Run(b.name, func(t *testing.T) {
			bin := b.module()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "bomb",
				Script: sandbox.Script{Module: bin, Entry: "run"}, Limits: sandbox.Limits{MemoryBytes: b.memory}},
				agent.NewBoard())
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d-byte module: %d KiB allocated, heap %d → %d MiB: %v", len(bin), allocated>>10,
				before.HeapSys>>20, after.HeapSys>>20, err)
			assert.Less(t, allocated, uint64(bombAllocation), "bytes allocated by the call")
			assert.Less(t, int64(after.HeapSys)-int64(before.HeapSys), int64(bombAllocation), "heap growth")
			switch {
			case b.limit != "":
				sandboxtest.RequireLimit(t, err, b.limit, "bomb")
			case b.kind != nil:
				sandboxtest.RequireKind(t, err, b.kind)
				assert.Contains(t, err.Error(), `"bomb"`)
			default:
				require.NoError(t, err)
			}
			if b.text != "" {
				assert.Contains(t, err.Error(), b.text)
			}
			next := agent.NewBoard()
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "next",
				Script: sandbox.Script{Module: ok, Entry: "run"}}, next))
			assert.Equal(t, true, next.Vars["ok"])
		})
	}
}

// bombAllocation bounds what one refused bomb may allocate: the checks
// allocate a few slices of their bounded counts, wazero nothing.
const bombAllocation = 64 << 20
