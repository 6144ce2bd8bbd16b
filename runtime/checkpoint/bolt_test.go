package checkpoint

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// boltStore is the embedded database the log store was measured against
// (docs/checkpoint.md, "Why a log"): the same entries (Chain), one bbolt
// bucket per exec id keyed by Seq, one transaction per save. It lives in
// the tests only: the log won.
type boltStore struct {
	db *bolt.DB
	mu chainsMu
}

type chainsMu struct{ chains map[string]*Chain }

func newBoltStore(t testing.TB) *boltStore {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "checkpoints.db"), 0o600, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return &boltStore{db: db, mu: chainsMu{chains: map[string]*Chain{}}}
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// Save stores cp's entry in one read-write transaction (bbolt flushes each
// commit). Saves of one exec id are serialised by bbolt's single writer.
func (s *boltStore) Save(ctx context.Context, cp agent.Checkpoint) error {
	if err := ValidateExecID(cp.ExecID); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		c := s.mu.chains[cp.ExecID]
		if c == nil {
			c = &Chain{}
			s.mu.chains[cp.ExecID] = c
		}
		e, err := c.Next(&cp)
		if err != nil {
			return err
		}
		if e.Kind == EntrySnapshot {
			if err := tx.DeleteBucket([]byte(cp.ExecID)); err != nil && err != bolt.ErrBucketNotFound {
				return err
			}
		}
		b, err := tx.CreateBucketIfNotExists([]byte(cp.ExecID))
		if err != nil {
			return err
		}
		if err := b.Put(seqKey(e.Seq), append([]byte{byte(e.Kind)}, e.Data...)); err != nil {
			c.Lost(e)
			return err
		}
		c.Commit(e, &cp)
		return nil
	})
}

func (s *boltStore) Load(ctx context.Context, execID string) (*agent.Checkpoint, error) {
	if err := ValidateExecID(execID); err != nil {
		return nil, err
	}
	var entries []Entry
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(execID))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) != 8 || len(v) < 1 {
				return &CorruptError{Where: execID, Reason: "bad key or value"}
			}
			entries = append(entries, Entry{Kind: EntryKind(v[0]), Seq: binary.BigEndian.Uint64(k), Data: append([]byte(nil), v[1:]...)})
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return Fold(entries)
}

// The comparison store passes the conformance suite too, so that the
// figures compare stores that keep the same promises.
func TestBoltComparisonStore(t *testing.T) {
	t.Parallel()
	checkpointtest.Run(t, func(t *testing.T) agent.CheckpointStore { return newBoltStore(t) })
}

// BenchmarkLogVsBolt runs the same 10-wave chain (one small change per
// wave on a board of 1 KiB, a new exec id per chain) and the load of its
// result on the log store and on bbolt, both flushing every save.
func BenchmarkLogVsBolt(b *testing.B) {
	stores := []struct {
		name string
		new  func(b *testing.B) agent.CheckpointStore
	}{
		{"log", func(b *testing.B) agent.CheckpointStore { s, _ := newCountingStore(b, Config{}); return s }},
		{"bbolt", func(b *testing.B) agent.CheckpointStore { return newBoltStore(b) }},
	}
	for _, st := range stores {
		b.Run("save-chain10/"+st.name, func(b *testing.B) {
			s := st.new(b)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				board := agent.NewBoard()
				board.Vars["doc"] = string(make([]byte, 1000))
				if err := chainRun(ctx, s, fmt.Sprintf("run-%d", i), 10, board); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("load/"+st.name, func(b *testing.B) {
			s := st.new(b)
			ctx := context.Background()
			board := agent.NewBoard()
			board.Vars["doc"] = string(make([]byte, 1000))
			require.NoError(b, chainRun(ctx, s, "run-1", 10, board))
			for b.Loop() {
				if _, err := s.Load(ctx, "run-1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
