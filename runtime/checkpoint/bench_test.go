package checkpoint_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/require"
)

var benchSizes = []struct {
	name  string
	bytes int
}{
	{"1KiB", 1 << 10},
	{"1MiB", 1 << 20},
}

// benchCheckpoint returns a checkpoint whose encoded record is about size
// bytes: a conversation of 200-byte messages.
func benchCheckpoint(tb testing.TB, size int) (agent.Checkpoint, int) {
	cp := checkpointtest.NewCheckpoint("run-0123456789abcdef", 1)
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 5)[:200]
	for i := 0; ; i++ {
		data, err := checkpoint.Encode(cp)
		require.NoError(tb, err)
		if len(data) >= size {
			return cp, len(data)
		}
		role := message.RoleUser
		if i%2 == 1 {
			role = message.RoleAssistant
		}
		cp.Board.Append("history", message.NewTextMessage(role, fmt.Sprintf("%04d %s", i, text)))
	}
}

type benchStore struct {
	name  string
	store agent.CheckpointStore
}

func benchStores(b *testing.B) []benchStore {
	return []benchStore{
		{"workspace", newStore(b, newWorkspace(b), "")},
		{"memory", checkpoint.NewMemory()},
	}
}

// BenchmarkStoreSave measures Save: encoding plus, for the workspace store,
// a synced write of the temporary file and its rename into place.
func BenchmarkStoreSave(b *testing.B) {
	for _, size := range benchSizes {
		cp, n := benchCheckpoint(b, size.bytes)
		for _, bs := range benchStores(b) {
			s := bs.store
			b.Run(bs.name+"/"+size.name, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				b.SetBytes(int64(n))
				for b.Loop() {
					if err := s.Save(ctx, cp); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStoreLoad measures Load: a read and the decoding of the record.
func BenchmarkStoreLoad(b *testing.B) {
	for _, size := range benchSizes {
		cp, n := benchCheckpoint(b, size.bytes)
		for _, bs := range benchStores(b) {
			s := bs.store
			b.Run(bs.name+"/"+size.name, func(b *testing.B) {
				ctx := context.Background()
				require.NoError(b, s.Save(ctx, cp))
				b.ReportAllocs()
				b.SetBytes(int64(n))
				for b.Loop() {
					got, err := s.Load(ctx, cp.ExecID)
					if err != nil || got == nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
