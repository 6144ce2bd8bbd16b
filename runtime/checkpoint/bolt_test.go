package checkpoint

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// BenchmarkLogVsBolt runs, in one loop, the same 10-wave chain (one
// small change per wave on a board of 1 KiB, a new exec id per chain) on
// the log store and on bbolt, both flushing every save, then loads each
// chain's result from both; x-log is bbolt's time over the log's.
func BenchmarkLogVsBolt(b *testing.B) {
	logStore, _ := newCountingStore(b, Config{})
	stores := [2]agent.CheckpointStore{logStore, newBoltStore(b)}
	ctx := context.Background()
	var save, load [2]time.Duration
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("run-%d", i)
		for k, s := range stores {
			board := agent.NewBoard()
			board.Vars["doc"] = string(make([]byte, 1000))
			t0 := time.Now()
			if err := chainRun(ctx, s, id, 10, board); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := s.Load(ctx, id); err != nil {
				b.Fatal(err)
			}
			save[k], load[k] = save[k]+t1.Sub(t0), load[k]+time.Since(t1)
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(save[0].Nanoseconds())/n, "log-save-ns")
	b.ReportMetric(float64(save[1].Nanoseconds())/n, "bbolt-save-ns")
	b.ReportMetric(float64(save[1])/float64(save[0]), "save-x-log")
	b.ReportMetric(float64(load[0].Nanoseconds())/n, "log-load-ns")
	b.ReportMetric(float64(load[1].Nanoseconds())/n, "bbolt-load-ns")
	b.ReportMetric(float64(load[1])/float64(load[0]), "load-x-log")
}

// flushRuns, run with the store named by the environment, saves ten 10-wave
// chains: strace -f -c counts its flushes (docs/checkpoint.md).
func TestFlushRuns(t *testing.T) {
	var s agent.CheckpointStore
	switch os.Getenv("CORRAL_FLUSH_STORE") {
	case "log":
		s, _ = newCountingStore(t, Config{})
	case "bbolt":
		s = newBoltStore(t)
	default:
		t.Skip("CORRAL_FLUSH_STORE=log or bbolt: for strace")
	}
	for i := range 10 {
		require.NoError(t, chainRun(context.Background(), s, fmt.Sprintf("run-%d", i), 10, agent.NewBoard()))
	}
}
