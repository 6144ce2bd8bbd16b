package event

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An IDBlock's ids are NewIDAt's: the time they encode, the alphabet,
// the length; each stays as it was made while later ones are carved from
// the same block.
func TestIDBlockIDs(t *testing.T) {
	t.Parallel()
	var b IDBlock
	base := time.Unix(1_700_000_000, 123)
	var ids, copies []string
	for i := range 100 {
		at := base.Add(time.Duration(i) * time.Microsecond)
		id := b.NewAt(at)
		require.Len(t, id, IDLen)
		assert.Equal(t, encodeID(uint64(at.UnixNano()), 0)[:12], id[:12], "the time of id %d", i)
		assert.Empty(t, strings.Trim(id, idAlphabet), "id %q", id)
		ids, copies = append(ids, id), append(copies, strings.Clone(id))
	}
	assert.Equal(t, copies, ids, "no id changed as later ones were made")
	for i := 1; i < len(ids); i++ {
		assert.Less(t, ids[i-1], ids[i], "ids sort by time")
	}
}

var sinkBlock *IDBlock

// Blocks grow from 8 ids to 32: a source of few ids allocates little, one
// of many allocates once per 32 ids.
func TestIDBlockAllocations(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct{ ids, allocs int }{{1, 1}, {8, 1}, {9, 2}, {24, 2}, {56, 3}, {88, 4}} {
		allocs := testing.AllocsPerRun(20, func() {
			b := &IDBlock{}
			sinkBlock = b // on the heap, whatever escape analysis finds: one allocation
			for range tc.ids {
				_ = b.NewAt(now)
			}
		})
		assert.Equal(t, float64(1+tc.allocs), allocs, "%d ids", tc.ids)
	}
}

// Concurrent callers get distinct, whole ids.
func TestIDBlockConcurrent(t *testing.T) {
	t.Parallel()
	var b IDBlock
	const workers, each = 8, 500
	out := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				out[w] = append(out[w], b.NewAt(time.Now()))
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, ids := range out {
		for _, id := range ids {
			require.Len(t, id, IDLen)
			require.Empty(t, strings.Trim(id, idAlphabet))
			require.False(t, seen[id], "id %q twice", id)
			seen[id] = true
		}
	}
	assert.Len(t, seen, workers*each)
}
