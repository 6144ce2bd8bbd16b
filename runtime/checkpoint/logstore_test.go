package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingDir is a logDir that counts the flushes to the disk (of files
// and of directories) and the renames.
type countingDir struct {
	logDir
	mu      sync.Mutex
	syncs   int
	renames int
}

func (d *countingDir) add(syncs, renames int) {
	d.mu.Lock()
	d.syncs += syncs
	d.renames += renames
	d.mu.Unlock()
}

func (d *countingDir) counts() (syncs, renames int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncs, d.renames
}

func (d *countingDir) OpenFile(name string, flag int, perm fs.FileMode) (logFile, error) {
	f, err := d.logDir.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countingFile{f, d}, nil
}

func (d *countingDir) SyncDir(name string) error { d.add(1, 0); return d.logDir.SyncDir(name) }

func (d *countingDir) Rename(from, to string) error { d.add(0, 1); return d.logDir.Rename(from, to) }

type countingFile struct {
	logFile
	d *countingDir
}

func (f countingFile) Sync() error { f.d.add(1, 0); return f.logFile.Sync() }

// newCountingStore returns a store in a fresh local workspace whose log
// directory counts what it does.
func newCountingStore(t testing.TB, cfg Config) (*Store, *countingDir) {
	t.Helper()
	ws, err := workspace.NewLocal(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	s, err := NewStoreWithConfig(ws, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	d := &countingDir{}
	s.logs.wrap = func(inner logDir) logDir { d.logDir = inner; return d }
	return s, d
}

// chainRun saves what a graph run of n nodes in a chain saves: one
// checkpoint per wave, each with the wave's one changed var.
func chainRun(ctx context.Context, s agent.CheckpointStore, execID string, n int, board *agent.Board) error {
	for i := range n {
		board.Vars[fmt.Sprintf("n%d", i)] = float64(i)
		cp := agent.Checkpoint{ExecID: execID, Steps: []string{fmt.Sprintf("n%d", i)}, Iteration: i + 1, Board: board,
			Changes: &agent.BoardChanges{Writer: 42, Seq: uint64(i + 1), Base: uint64(i),
				Vars: map[string]struct{}{fmt.Sprintf("n%d", i): {}}}}
		if err := s.Save(ctx, cp); err != nil {
			return err
		}
	}
	return nil
}

// A 10-node run flushes the disk 11 times under sync: wave (its log's
// creation, file and directory, then one per wave) and renames nothing;
// under turn and none only the creation is flushed, and under turn a
// session record's save flushes the run's log.
// REF 7.9.1
// REF 7.10
func TestFlushesPerRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		sync         Sync
		run, session int
	}{
		{SyncWave, 11, 2},
		{SyncTurn, 2, 1 + 2},
		{SyncNone, 2, 2},
	} {
		s, d := newCountingStore(t, Config{Sync: tc.sync})
		require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-other", Board: agent.NewBoard()}), "the directory exists")
		before, _ := d.counts()
		require.NoError(t, chainRun(ctx, s, "run-1", 10, agent.NewBoard()))
		syncs, renames := d.counts()
		assert.Equal(t, tc.run, syncs-before, "sync %s: flushes of a 10-node run", tc.sync)
		assert.Zero(t, renames, "sync %s: no rename on the way", tc.sync)
		require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: SessionKey("a", "c"), Board: agent.NewBoard()}))
		after, _ := d.counts()
		assert.Equal(t, tc.session, after-syncs, "sync %s: flushes of a new session record", tc.sync)
		got, err := s.Load(ctx, "run-1")
		require.NoError(t, err)
		assert.Equal(t, 10, got.Iteration)
		assert.Len(t, got.Board.Vars, 10)
	}
}

// A record of the earlier format (a JSON file per exec id, written by the
// version before the logs; testdata/format-json) is read; the exec id's
// next save replaces it by a log, and the other records stay as they are.
// REF 7.9.2
func TestEarlierFormatIsMigrated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS("testdata/format-json")))
	ws, err := workspace.Open(root)
	require.NoError(t, err)
	defer ws.Close()
	s, err := NewStore(ws, "")
	require.NoError(t, err)
	defer s.Close()
	runID, sessionID := "run-0123456789abcdef", SessionKey("assistant", "c1")
	ids, err := s.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{runID, sessionID}, ids)
	run, err := s.Load(ctx, runID)
	require.NoError(t, err)
	assert.Equal(t, 3, run.Iteration)
	assert.Equal(t, 3.0, run.Board.Vars["count"])
	assert.Equal(t, "roses", run.Board.Channels["main"][1].Parts[0].Text)
	assert.Equal(t, "poem@1", run.SpecVersion)
	sess, err := s.Load(ctx, sessionID)
	require.NoError(t, err)
	assert.JSONEq(t, `{"resumable_run_id":"run-0123456789abcdef"}`, string(sess.Payload))

	run.Iteration = 4
	run.Board.Vars["draft"] = "a second draft"
	require.NoError(t, s.Save(ctx, *run))
	names, err := ws.List(ctx, DefaultPrefix)
	require.NoError(t, err)
	assert.Equal(t, []string{runID + ".log", sessionID + ".json"}, names, "the run migrated, the session not yet")
	again, err := NewStore(ws, "")
	require.NoError(t, err)
	got, err := again.Load(ctx, runID)
	require.NoError(t, err)
	assert.Equal(t, 4, got.Iteration)
	assert.Equal(t, "a second draft", got.Board.Vars["draft"])
	ids, err = again.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{runID, sessionID}, ids)
}

// A log that is not a log, or whose whole entries contradict each other,
// is corrupt and named; its next save replaces it.
// REF 7.9.3
func TestCorruptLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	snap, err := Encode(agent.Checkpoint{ExecID: "run-1", Board: agent.NewBoard()})
	require.NoError(t, err)
	other, err := Encode(agent.Checkpoint{ExecID: "run-2", Board: agent.NewBoard()})
	require.NoError(t, err)
	log := func(entries ...Entry) []byte {
		out := []byte(logMagic)
		for _, e := range entries {
			out = appendFrame(out, e)
		}
		return out
	}
	flipped := log(Entry{EntrySnapshot, 1, snap}, Entry{EntryDelta, 2, []byte(`{"exec_id":"run-1","board":{}}`)})
	flipped[len(logMagic)+frameHeader+3] ^= 0x20 // in the snapshot's data
	// Under sync: none a power failure may keep a later frame and lose part
	// of an earlier one: the log is cut at the damage instead.
	none, _ := newCountingStore(t, Config{Sync: SyncNone})
	file := filepath.Join(none.ws.Root(), DefaultPrefix, "run-1.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o750))
	require.NoError(t, os.WriteFile(file, flipped, 0o640))
	got, err := none.Load(ctx, "run-1")
	require.NoError(t, err)
	assert.Nil(t, got, "nothing before the damage")
	for why, raw := range map[string][]byte{
		"damage before a whole entry": flipped,
		"another magic":               []byte("CRLOG99\nwhatever"),
		"not a log":                   []byte(`{"exec_id":"run-1"}`),
		"sequence goes back":          log(Entry{EntrySnapshot, 2, snap}, Entry{EntrySnapshot, 1, snap}),
		"unknown kind":                log(Entry{EntrySnapshot, 1, snap}, Entry{7, 2, []byte("{}")}),
		"delta with a gap":            log(Entry{EntrySnapshot, 1, snap}, Entry{EntryDelta, 3, []byte("{}")}),
		"delta not JSON":              log(Entry{EntrySnapshot, 1, snap}, Entry{EntryDelta, 2, []byte("{")}),
		"snapshot not JSON":           log(Entry{EntrySnapshot, 1, []byte("nope")}),
		"another exec id":             log(Entry{EntrySnapshot, 1, other}),
		"deltas only":                 log(Entry{EntryDelta, 1, []byte("{}")}),
		"append past the end":         log(Entry{EntrySnapshot, 1, snap}, Entry{EntryDelta, 2, []byte(`{"exec_id":"run-1","iteration":0,"board":{},"timestamp":"0001-01-01T00:00:00Z","channels_from":{"c":{"from":4,"messages":[]}}}`)}),
	} {
		s, _ := newCountingStore(t, Config{})
		file := filepath.Join(s.ws.Root(), DefaultPrefix, "run-1.log")
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o750))
		require.NoError(t, os.WriteFile(file, raw, 0o640))
		got, err := s.Load(ctx, "run-1")
		require.ErrorIs(t, err, ErrCorrupt, why)
		assert.Nil(t, got, why)
		assert.Contains(t, err.Error(), DefaultPrefix+"/run-1.log", why)
		require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: 9, Board: agent.NewBoard()}), why)
		got, err = s.Load(ctx, "run-1")
		require.NoError(t, err, why)
		assert.Equal(t, 9, got.Iteration, why)
	}
}

// A torn tail is never read, and the next save cuts it before it appends,
// so nothing follows garbage.
// REF 7.9.4
func TestTornTailIsCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newCountingStore(t, Config{})
	require.NoError(t, chainRun(ctx, s, "run-1", 3, agent.NewBoard()))
	file := filepath.Join(s.ws.Root(), DefaultPrefix, "run-1.log")
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	whole := len(raw)
	for _, tail := range [][]byte{{0}, []byte("garbage that is not a frame"), appendFrame(nil, Entry{EntryDelta, 4, []byte("{}")})[:frameHeader+1]} {
		require.NoError(t, os.WriteFile(file, append(raw[:whole:whole], tail...), 0o640))
		s2, err := NewStore(s.ws, "")
		require.NoError(t, err)
		got, err := s2.Load(ctx, "run-1")
		require.NoError(t, err)
		assert.Equal(t, 3, got.Iteration)
		got.Iteration = 4
		got.Board.Vars["after"] = true
		require.NoError(t, s2.Save(ctx, *got))
		after, err := os.ReadFile(file)
		require.NoError(t, err)
		sc, reason := readLog(after, 1<<20, true)
		require.Empty(t, reason)
		assert.False(t, sc.torn, "the torn tail was cut")
		assert.Equal(t, raw, after[:whole], "the committed entries are kept")
		got, err = s2.Load(ctx, "run-1")
		require.NoError(t, err)
		assert.Equal(t, 4, got.Iteration)
		require.NoError(t, s2.Close())
	}
}

// A large log is compacted: a snapshot replaces it through a temporary
// file, and the log stays within a few times the board.
// REF 7.9.5
func TestLargeLogIsCompacted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, d := newCountingStore(t, Config{Policy: Policy{MaxDeltas: 8}})
	board := agent.NewBoard()
	board.Vars["big"] = strings.Repeat("x", 100<<10)
	require.NoError(t, chainRun(ctx, s, "run-1", 200, board))
	_, renames := d.counts()
	assert.Positive(t, renames, "a compaction renamed a new log into place")
	st, err := os.Stat(filepath.Join(s.ws.Root(), DefaultPrefix, "run-1.log"))
	require.NoError(t, err)
	assert.Less(t, st.Size(), int64(6*(110<<10)), "the log stays within a few boards")
	got, err := s.Load(ctx, "run-1")
	require.NoError(t, err)
	assert.Equal(t, 200, got.Iteration)
	assert.Len(t, got.Board.Vars, 201)
	tmp, err := s.ws.List(ctx, DefaultPrefix+"/.tmp")
	require.NoError(t, err)
	assert.Empty(t, tmp, "no temporary file stays")
}

// FuzzReadLog: reading any bytes as a log never panics; what it accepts
// is whole frames that write back to the same bytes, numbered upwards.
func FuzzReadLog(f *testing.F) {
	snap, _ := Encode(agent.Checkpoint{ExecID: "run-1", Board: agent.NewBoard()})
	good := appendFrame(appendFrame([]byte(logMagic), Entry{EntrySnapshot, 1, snap}), Entry{EntryDelta, 2, []byte(`{"exec_id":"run-1"}`)})
	f.Add(good, true)
	f.Add(good[:len(good)-3], true)
	f.Add([]byte(logMagic), true)
	f.Add([]byte("CRLOG"), true)
	f.Add([]byte{}, true)
	f.Add(append(good, 0xff, 0, 0, 0, 1), true)
	longer := append([]byte(nil), good...)
	longer[len(logMagic)+2] ^= 0x40 // the snapshot's length, damaged
	f.Add(longer, true)
	f.Add(longer, false)
	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		sc, reason := readLog(data, 1<<16, strict)
		if reason != "" {
			return
		}
		if sc.end > len(data) || sc.torn != (sc.end < len(data)) {
			t.Fatalf("end %d torn %v of %d bytes", sc.end, sc.torn, len(data))
		}
		var prev uint64
		for i, e := range sc.entries {
			if e.Seq <= prev {
				t.Fatalf("entry %d: %v %d after %d", i, e.Kind, e.Seq, prev)
			}
			prev = e.Seq
		}
		if sc.end >= len(logMagic) {
			again, reason := readLog(data[:sc.end], 1<<16, strict)
			if reason != "" || again.torn || again.lastSeq != sc.lastSeq || len(again.entries) != len(sc.entries) {
				t.Fatalf("the whole frames do not read back alike")
			}
		}
		if len(sc.entries) > 0 {
			_, _ = Fold(sc.entries) // may be corrupt, must not panic
		}
	})
}

// FuzzFoldDelta: folding any delta record onto a snapshot never panics,
// and a delta it accepts keeps the exec id and gives a valid checkpoint.
func FuzzFoldDelta(f *testing.F) {
	board := agent.NewBoard()
	board.Vars["a"] = 1.0
	board.Append("c", message.NewTextMessage(message.RoleUser, "hi"))
	snap, _ := Encode(agent.Checkpoint{ExecID: "run-1", Board: board})
	f.Add([]byte(`{"exec_id":"run-1","iteration":1,"board":{},"timestamp":"2026-01-01T00:00:00Z","set":{"b":[1,"x"]},"unset":["a"],"channels_from":{"c":{"from":1,"messages":[{"role":"user","parts":[]}]}},"drop":["d"]}`))
	f.Add([]byte(`{"exec_id":"run-1","board":{},"channels_from":{"c":{"from":-1}}}`))
	f.Add([]byte(`{"exec_id":"run-2","board":{}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, delta []byte) {
		cp, err := Fold([]Entry{{EntrySnapshot, 1, snap}, {EntryDelta, 2, delta}})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("not a corrupt error: %v", err)
			}
			return
		}
		if cp.ExecID != "run-1" || cp.Validate() != nil {
			t.Fatalf("accepted %+v", cp)
		}
	})
}

// A log never outgrows what the workspace can read back: past half its
// max_file_bytes the next save compacts it to a snapshot alone.
// REF 7.9.5
func TestLogStaysReadable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws, err := workspace.NewLocalWithConfig(t.TempDir(), workspace.Config{MaxFileBytes: 64 << 10})
	require.NoError(t, err)
	defer ws.Close()
	s, err := NewStore(ws, "")
	require.NoError(t, err)
	board := agent.NewBoard()
	board.Vars["big"] = strings.Repeat("b", 20<<10)
	require.NoError(t, chainRun(ctx, s, "run-1", 100, board))
	got, err := s.Load(ctx, "run-1")
	require.NoError(t, err)
	assert.Equal(t, 100, got.Iteration)
	st, err := os.Stat(filepath.Join(ws.Root(), DefaultPrefix, "run-1.log"))
	require.NoError(t, err)
	assert.LessOrEqual(t, st.Size(), int64(32<<10))

	// A log too long to read back (written under a larger cap) fails its
	// load with BudgetExceeded, and the next save replaces it.
	long := filepath.Join(ws.Root(), DefaultPrefix, "run-2.log")
	require.NoError(t, os.WriteFile(long, []byte(logMagic+strings.Repeat("x", 100<<10)), 0o640))
	_, err = s.Load(ctx, "run-2")
	require.ErrorIs(t, err, fault.BudgetExceeded)
	require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-2", Iteration: 5, Board: agent.NewBoard()}))
	got, err = s.Load(ctx, "run-2")
	require.NoError(t, err)
	assert.Equal(t, 5, got.Iteration)
}

// Many exec ids saved and deleted at once, past the number of states the
// store keeps: every exec id loads as its last save, deleted ones as
// nothing.
func TestLogStoreHammer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newCountingStore(t, Config{Sync: SyncNone})
	s.logs.limit = 8
	const workers, ids = 8, 6
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				id := fmt.Sprintf("run-%d-%d", w, i)
				assert.NoError(t, chainRun(ctx, s, id, 5, agent.NewBoard()))
				if i%3 == 0 {
					assert.NoError(t, s.Delete(ctx, id))
				}
			}
		}()
	}
	wg.Wait()
	for w := range workers {
		for i := range ids {
			got, err := s.Load(ctx, fmt.Sprintf("run-%d-%d", w, i))
			require.NoError(t, err)
			if i%3 == 0 {
				assert.Nil(t, got)
				continue
			}
			require.NotNil(t, got)
			assert.Equal(t, 5, got.Iteration)
			assert.Len(t, got.Board.Vars, 5)
		}
	}
	s.logs.mu.Lock()
	assert.LessOrEqual(t, len(s.logs.ids), 8)
	s.logs.mu.Unlock()
}

// Close flushes what sync: turn left unflushed, once; a save after it is
// NotAvailable, and a load still reads.
// REF 7.10
func TestCloseFlushesTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, d := newCountingStore(t, Config{Sync: SyncTurn})
	require.NoError(t, chainRun(ctx, s, "run-1", 5, agent.NewBoard()))
	before, _ := d.counts()
	require.NoError(t, s.Close())
	after, _ := d.counts()
	assert.Equal(t, 1, after-before, "the run's log is flushed")
	require.NoError(t, s.Close(), "Close is idempotent")
	again, _ := d.counts()
	assert.Equal(t, after, again)
	err := s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Board: agent.NewBoard()})
	require.ErrorIs(t, err, fault.NotAvailable)
	got, err := s.Load(ctx, "run-1")
	require.NoError(t, err)
	assert.Equal(t, 5, got.Iteration)
}
