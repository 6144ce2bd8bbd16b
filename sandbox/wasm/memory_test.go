package wasm

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The allocator never hands out memory past the limit, its first
// allocation (the declared minimum) included, and remembers a refusal.
func TestAllocatorRefusesPastTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []uint64
		ok    []bool
	}{
		{"minimum past the limit", []uint64{2 * pageSize}, []bool{false}},
		{"minimum at the limit", []uint64{pageSize}, []bool{true}},
		{"growth past the limit", []uint64{0, pageSize, 2 * pageSize}, []bool{true, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := &linearMemory{limit: pageSize}
			lm := allocatorFor(mem).Allocate(0, 4*pageSize)
			defer lm.Free()
			for i, size := range tc.sizes {
				buf := lm.Reallocate(size)
				if tc.ok[i] {
					assert.Len(t, buf, int(size))
				} else {
					assert.Nil(t, buf)
				}
			}
			assert.Equal(t, !tc.ok[len(tc.ok)-1], mem.refused, "the refusal is remembered")
		})
	}
}
