package checkpoint

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A record written over the memory of the one it replaces reads back as
// itself, whether it is shorter or longer, and memory is reused only where
// little of it is wasted.
func TestMemoryReusesRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemory()
	save := func(text string, payload json.RawMessage) []byte {
		t.Helper()
		cp := agent.Checkpoint{ExecID: "run-1", Iteration: len(text), Board: agent.NewBoard(), Payload: payload,
			Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
		cp.Board.Vars["text"] = text
		require.NoError(t, m.Save(ctx, cp))
		want, err := json.Marshal(cp)
		require.NoError(t, err)
		r := m.record("run-1")
		r.mu.Lock()
		got := r.snap
		r.mu.Unlock()
		require.Equal(t, string(want), string(got), "the stored record")
		loaded, err := m.Load(ctx, "run-1")
		require.NoError(t, err)
		assert.Equal(t, text, loaded.Board.Vars["text"])
		return got
	}
	first := save(strings.Repeat("a", 100), nil)
	second := save(strings.Repeat("b", 90), nil)
	assert.Same(t, &first[:1][0], &second[:1][0], "a shorter record is written over the longer one")
	third := save(strings.Repeat("c", 100), nil)
	assert.Same(t, &first[:1][0], &third[:1][0], "and a longer one that fits its memory too")
	long := save(strings.Repeat("d", 3000), nil)
	assert.NotSame(t, &first[:1][0], &long[:1][0], "a record that does not fit gets new memory")
	short := save("e", nil)
	assert.NotSame(t, &long[:1][0], &short[:1][0], "a record of less than half of the memory gets its own")
	assert.Less(t, cap(short), 1000)
	save(strings.Repeat("f", 20000), nil)                     // written by the general path
	save(strings.Repeat("g", 10), json.RawMessage(`{"a":1}`)) // not in the plain shape
	save(strings.Repeat("h", 20), nil)
}

// A Save that fails leaves the record it would have replaced as it was.
func TestMemoryFailedSaveKeepsRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemory()
	cp := agent.Checkpoint{ExecID: "run-1", Board: agent.NewBoard()}
	cp.Board.Vars["n"] = 1.0
	require.NoError(t, m.Save(ctx, cp))
	for _, bad := range []any{opaqueFunc, json.RawMessage(`{`), strings.Repeat("x", 600) + "\xff"} {
		broken := cp
		broken.Board = agent.NewBoard()
		broken.Board.Vars["n"] = 2.0
		broken.Board.Vars["bad"] = bad
		err := m.Save(ctx, broken)
		if _, marshalErr := json.Marshal(broken); marshalErr == nil {
			require.NoError(t, err)
			require.NoError(t, m.Save(ctx, cp))
			continue
		}
		require.Error(t, err)
		got, err := m.Load(ctx, "run-1")
		require.NoError(t, err)
		assert.Equal(t, 1.0, got.Board.Vars["n"])
	}
}

var opaqueFunc = func() {}
