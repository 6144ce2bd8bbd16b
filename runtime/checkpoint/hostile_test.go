package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// damageLog saves waves of one exec id as an engine does (a snapshot, then
// deltas that set, delete and re-set a var and append to a channel) and
// returns the log's bytes, the offset of each frame and the board after
// each wave (index 0: nothing saved).
func damageLog(t *testing.T, waves int) (raw []byte, frames []int, boards []*agent.Board) {
	t.Helper()
	ctx := context.Background()
	s, _ := newCountingStore(t, Config{})
	b := agent.NewBoard()
	boards = append(boards, nil)
	for i := 1; i <= waves; i++ {
		changed := map[string]struct{}{"x": {}, fmt.Sprintf("v%d", i%3): {}}
		switch i % 3 {
		case 0:
			delete(b.Vars, "x")
		default:
			b.Vars["x"] = fmt.Sprintf("x at %d", i)
		}
		b.Vars[fmt.Sprintf("v%d", i%3)] = float64(i)
		from := len(b.Channels["main"])
		b.Append("main", message.NewTextMessage(message.RoleUser, fmt.Sprintf("m%d", i)))
		cp := agent.Checkpoint{ExecID: "run-1", Iteration: i, Board: b,
			Changes: &agent.BoardChanges{Writer: 7, Seq: uint64(i), Base: uint64(i - 1), Vars: changed,
				Channels: map[string]int{"main": from}}}
		require.NoError(t, s.Save(ctx, cp))
		got, err := s.Load(ctx, "run-1")
		require.NoError(t, err)
		boards = append(boards, got.Board)
	}
	raw, err := os.ReadFile(filepath.Join(s.ws.Root(), DefaultPrefix, "run-1.log"))
	require.NoError(t, err)
	sc, reason := readLog(raw, 1<<20, true)
	require.Empty(t, reason)
	require.Len(t, sc.entries, waves, "one snapshot and its deltas")
	for off := len(logMagic); off < len(raw); {
		frames = append(frames, off)
		off += frameHeader + int(uint32(raw[off])|uint32(raw[off+1])<<8|uint32(raw[off+2])<<16|uint32(raw[off+3])<<24)
	}
	return raw, frames, boards
}

// frameOf returns the index of the frame that holds byte off, -1 in the
// magic.
func frameOf(frames []int, off int) int {
	i := -1
	for j, start := range frames {
		if off >= start {
			i = j
		}
	}
	return i
}

// Every byte of a real log, damaged: a load never panics and never returns
// a record that was not saved. Under sync: wave the damage of a frame with
// a whole frame after it is reported (committed waves after it are never
// dropped without a word); damage in the last frame loses that frame
// alone. Under sync: none the log is cut at the damaged frame and every
// wave before it loads.
// REF 7.9.3
// REF 7.9.4
func TestEveryByteDamaged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw, frames, boards := damageLog(t, 9)
	last := len(frames) - 1
	for _, sync := range []Sync{SyncWave, SyncNone} {
		s, _ := newCountingStore(t, Config{Sync: sync})
		file := filepath.Join(s.ws.Root(), DefaultPrefix, "run-1.log")
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o750))
		for off := range raw {
			for _, mask := range []byte{0xff, 0x01, 0x80} {
				bad := append([]byte(nil), raw...)
				bad[off] ^= mask
				require.NoError(t, os.WriteFile(file, bad, 0o640))
				where := fmt.Sprintf("sync %s, byte %d ^ %#x", sync, off, mask)
				got, err := s.Load(ctx, "run-1")
				f := frameOf(frames, off)
				switch {
				case f < 0:
					require.ErrorIs(t, err, ErrCorrupt, where)
				case sync == SyncWave && f < last:
					require.ErrorIs(t, err, ErrCorrupt, "%s: damage before committed frames is reported", where)
				case f == 0:
					require.NoError(t, err, where)
					require.Nil(t, got, where)
				default:
					require.NoError(t, err, where)
					require.NotNil(t, got, where)
					require.Equal(t, f, got.Iteration, where)
					require.Equal(t, boards[f], got.Board, where)
				}
			}
		}
	}
}

// A frame whose length claims gigabytes allocates nothing of that size,
// and a torn tail after it is still a torn tail.
// REF 7.9.4
func TestHugeLengthAllocatesNothing(t *testing.T) {
	raw, frames, _ := damageLog(t, 3)
	bad := append([]byte(nil), raw[:frames[2]]...)
	bad = append(bad, 0xff, 0xff, 0xff, 0x7f, byte(EntryDelta), 3, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4)
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	sc, reason := readLog(bad, 64<<20, true)
	goruntime.ReadMemStats(&after)
	require.Empty(t, reason)
	assert.True(t, sc.torn)
	assert.Len(t, sc.entries, 2)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20))
}

// A crafted tail of many plausible frame headers, each claiming the rest
// of the file, is no tail a crash leaves: under sync: wave it is reported
// corrupt after a bounded number of checksums, instead of checksumming the
// rest of the file at each of them.
func TestCraftedTailIsBounded(t *testing.T) {
	raw, _, _ := damageLog(t, 2)
	bad := append([]byte(nil), raw...)
	bad = append(bad, 0xff) // damage: not a whole frame
	const headers = 20000
	for i := range headers {
		rest := uint32((headers - i - 1) * frameHeader)
		bad = append(bad, byte(rest), byte(rest>>8), byte(rest>>16), byte(rest>>24), byte(EntryDelta), 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	}
	_, reason := readLog(bad, 64<<20, true)
	assert.NotEmpty(t, reason)
}

// A delta log of many small appends to a long channel folds in time and
// memory that follow the log's size: each append is not a copy of the
// whole channel.
func TestFoldAppendsInPlace(t *testing.T) {
	b := agent.NewBoard()
	for i := range 2000 {
		b.Append("main", message.NewTextMessage(message.RoleUser, fmt.Sprintf("m%d", i)))
	}
	snap, err := Encode(agent.Checkpoint{ExecID: "run-1", Board: b})
	require.NoError(t, err)
	entries := []Entry{{EntrySnapshot, 1, snap}}
	size := len(snap)
	for i := range 3000 {
		from := 2000 + i
		data := fmt.Appendf(nil, `{"exec_id":"run-1","iteration":%d,"board":{},"timestamp":"0001-01-01T00:00:00Z","set":{},"channels_from":{"main":{"from":%d,"messages":[{"role":"user","parts":[{"type":"text","text":"d%d"}]}]}}}`, i, from, i)
		entries = append(entries, Entry{EntryDelta, uint64(i + 2), data})
		size += len(data)
	}
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	cp, err := Fold(entries)
	goruntime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Len(t, cp.Board.Channels["main"], 5000)
	assert.Equal(t, "d2999", cp.Board.Channels["main"][4999].Text())
	alloc := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, alloc, uint64(40*size), "allocated %d folding %d bytes of entries", alloc, size)
}

// A record too large for the workspace's max_file_bytes is refused by
// Save (BudgetExceeded) rather than written where no load can read it.
func TestSaveRefusesWhatLoadCannotRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws, err := workspace.NewLocalWithConfig(t.TempDir(), workspace.Config{MaxFileBytes: 4 << 10})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	s, err := NewStore(ws, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	small := agent.NewBoard()
	small.Vars["v"] = "small"
	require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: 1, Board: small}))
	big := agent.NewBoard()
	big.Vars["v"] = strings.Repeat("x", 8<<10)
	for _, id := range []string{"run-1", "run-2"} {
		err = s.Save(ctx, agent.Checkpoint{ExecID: id, Iteration: 2, Board: big})
		require.Error(t, err, id)
		assert.True(t, fault.Is(err, fault.BudgetExceeded), "%s: %v", id, err)
	}
	got, err := s.Load(ctx, "run-1")
	require.NoError(t, err)
	assert.Equal(t, 1, got.Iteration, "the record before the refused save")
	got, err = s.Load(ctx, "run-2")
	require.NoError(t, err)
	assert.Nil(t, got)
}

// Close racing saves: a save either completes (and is then loadable) or is
// NotAvailable; none fails with an internal error on a closed directory.
func TestCloseRacingSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := range 20 {
		s, _ := newCountingStore(t, Config{Sync: SyncTurn})
		require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-0", Board: agent.NewBoard()}))
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := range 4 {
			wg.Go(func() {
				for i := range 16 {
					id := fmt.Sprintf("run-%d-%d", g, i)
					if err := s.Save(ctx, agent.Checkpoint{ExecID: id, Iteration: i, Board: agent.NewBoard()}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		require.NoError(t, s.Close())
		wg.Wait()
		close(errs)
		for err := range errs {
			assert.True(t, fault.Is(err, fault.NotAvailable), "round %d: %v", round, err)
		}
	}
}

// A log file that is a symbolic link to another exec id's log is never
// appended through: the other record stays intact.
func TestPlantedSymlinkLeavesTargetAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newCountingStore(t, Config{})
	require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-b", Iteration: 5, Board: agent.NewBoard()}))
	dir := filepath.Join(s.ws.Root(), DefaultPrefix)
	require.NoError(t, os.Symlink("run-b.log", filepath.Join(dir, "run-a.log")))
	before, err := os.ReadFile(filepath.Join(dir, "run-b.log"))
	require.NoError(t, err)
	s2, err := NewStore(s.ws, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Close() })
	require.NoError(t, s2.Save(ctx, agent.Checkpoint{ExecID: "run-a", Iteration: 1, Board: agent.NewBoard()}))
	after, err := os.ReadFile(filepath.Join(dir, "run-b.log"))
	require.NoError(t, err)
	assert.Equal(t, before, after, "run-b's log is untouched")
	got, err := s2.Load(ctx, "run-b")
	require.NoError(t, err)
	assert.Equal(t, 5, got.Iteration)
	got, err = s2.Load(ctx, "run-a")
	require.NoError(t, err)
	assert.Equal(t, 1, got.Iteration)
}

// Two stores on one directory (a runtime being replaced while the old one
// finishes a save): a store whose idea of a log is stale never appends an
// entry that makes the log contradict itself, and never cuts what the
// other appended.
func TestTwoStoresOneLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := newCountingStore(t, Config{})
	board := agent.NewBoard()
	require.NoError(t, chainRun(ctx, a, "run-1", 2, board))
	b, err := NewStore(a.ws, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.NoError(t, b.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: 3, Board: agent.NewBoard()}))
	// a, stale, saves its run's next wave as a delta of what it wrote.
	board.Vars["n2"] = 2.0
	require.NoError(t, a.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: 4, Board: board,
		Changes: &agent.BoardChanges{Writer: 42, Seq: 3, Base: 2, Vars: map[string]struct{}{"n2": {}}}}))
	got, err := b.Load(ctx, "run-1")
	require.NoError(t, err)
	assert.Equal(t, 4, got.Iteration)
	assert.Equal(t, board.Vars, got.Board.Vars)
	// A torn tail both see: the stale store's cut must not remove b's
	// committed entry.
	file := filepath.Join(a.ws.Root(), DefaultPrefix, "run-2.log")
	require.NoError(t, a.Save(ctx, agent.Checkpoint{ExecID: "run-2", Iteration: 1, Board: agent.NewBoard()}))
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, append(raw, 1, 2, 3), 0o640))
	a2, err := NewStore(a.ws, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = a2.Close() })
	st := a2.logs.state("run-2")
	require.NoError(t, a2.logs.scan(ctx, st, "run-2"))
	require.True(t, st.torn)
	require.NoError(t, b.Save(ctx, agent.Checkpoint{ExecID: "run-2", Iteration: 2, Board: agent.NewBoard()}))
	require.NoError(t, a2.Save(ctx, agent.Checkpoint{ExecID: "run-2", Iteration: 3, Board: agent.NewBoard()}))
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	sc, reason := readLog(after, 1<<20, true)
	require.Empty(t, reason)
	require.Len(t, sc.entries, 1)
	assert.Equal(t, uint64(3), sc.lastSeq, "b's entry 2 is kept before a2's 3")
}

// blockingDir holds the first append to a log until released.
type blockingDir struct {
	logDir
	entered, release chan struct{}
	once             sync.Once
}

func (d *blockingDir) OpenFile(name string, flag int, perm fs.FileMode) (logFile, error) {
	if flag&os.O_APPEND != 0 {
		d.once.Do(func() { close(d.entered); <-d.release })
	}
	return d.logDir.OpenFile(name, flag, perm)
}

// Close called while a save is writing waits for it: the save completes
// and its entry is flushed, instead of failing on a closed directory.
func TestCloseWaitsForSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newCountingStore(t, Config{Sync: SyncTurn})
	d := &blockingDir{entered: make(chan struct{}), release: make(chan struct{})}
	s.logs.wrap = func(inner logDir) logDir { d.logDir = inner; return d }
	require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: 1, Board: agent.NewBoard()}))
	saved := make(chan error, 1)
	go func() { saved <- s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: 2, Board: agent.NewBoard()}) }()
	<-d.entered
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	for {
		s.logs.mu.Lock()
		c := s.logs.closed
		s.logs.mu.Unlock()
		if c {
			break
		}
		goruntime.Gosched()
	}
	close(d.release)
	require.NoError(t, <-saved, "the save in progress completes")
	require.NoError(t, <-closed)
	err := s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: 3, Board: agent.NewBoard()})
	assert.True(t, fault.Is(err, fault.NotAvailable), "%v", err)
	got, err := s.Load(ctx, "run-1")
	require.NoError(t, err)
	assert.Equal(t, 2, got.Iteration)
}

// Exec ids that name files badly are Validation errors for Save, Load and
// Delete, and nothing is written; the longest id allowed, of multi-byte
// characters, saves, compacts (its temporary name stays within a file
// name's 255 bytes) and loads; two spellings of "é" (composed and
// decomposed) are two exec ids, each loading its own record.
func TestExecIDsThatNameFilesBadly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newCountingStore(t, Config{Policy: Policy{MaxDeltas: 1}})
	for _, id := range []string{"", " ", ".", "..", "../x", "a/b", `a\b`, "/abs", "a\x00b", "a\nb", "a\x7fb",
		strings.Repeat("x", MaxExecIDBytes+1), strings.Repeat("é", MaxExecIDBytes/2) + "x"} {
		cp := agent.Checkpoint{ExecID: id, Board: agent.NewBoard()}
		assert.True(t, fault.Is(s.Save(ctx, cp), fault.Validation), "save %q", id)
		_, err := s.Load(ctx, id)
		assert.True(t, fault.Is(err, fault.Validation), "load %q", id)
		assert.True(t, fault.Is(s.Delete(ctx, id), fault.Validation), "delete %q", id)
	}
	ids, err := s.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids)
	long := strings.Repeat("é", MaxExecIDBytes/2)
	big := agent.NewBoard()
	big.Vars["v"] = strings.Repeat("v", 300<<10)
	for i := range 6 { // past 256 KiB: a compaction
		big.Vars["i"] = float64(i)
		require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: long, Iteration: i, Board: big}), "save %d", i)
	}
	got, err := s.Load(ctx, long)
	require.NoError(t, err)
	assert.Equal(t, 5, got.Iteration)
	composed, decomposed := "run-\u00e9", "run-e\u0301"
	require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: composed, Iteration: 1, Board: agent.NewBoard()}))
	require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: decomposed, Iteration: 2, Board: agent.NewBoard()}))
	for id, want := range map[string]int{composed: 1, decomposed: 2} {
		got, err := s.Load(ctx, id)
		require.NoError(t, err, "%q", id)
		assert.Equal(t, want, got.Iteration, "%q", id)
	}
}

// A named pipe planted where a log should be never makes a load or a save
// wait for a writer: Load reports the log corrupt, and the next save
// replaces it. A directory there is corrupt too, and a save fails instead
// of waiting.
func TestPlantedPipeOrDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newCountingStore(t, Config{})
	dir := filepath.Join(s.ws.Root(), DefaultPrefix)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "run-2.log"), 0o750))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "run-1.log"), 0o640))
	for _, id := range []string{"run-1", "run-2"} {
		_, err := s.Load(ctx, id)
		require.ErrorIs(t, err, ErrCorrupt, id)
		assert.Contains(t, err.Error(), DefaultPrefix+"/"+id+".log")
	}
	require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: 1, Board: agent.NewBoard()}))
	got, err := s.Load(ctx, "run-1")
	require.NoError(t, err)
	assert.Equal(t, 1, got.Iteration)
	require.Error(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-2", Iteration: 1, Board: agent.NewBoard()}))
}

// Changes that claim a channel's new messages start past where the stored
// state ends it (a writer that miscounted) are stored whole: the history
// never becomes a log that cannot fold, in every store that uses a Chain.
func TestChangesPastTheChannelAreStoredWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs, _ := newCountingStore(t, Config{})
	for name, s := range map[string]agent.CheckpointStore{"log": fs, "memory": NewMemory()} {
		b := agent.NewBoard()
		b.Append("main", message.NewTextMessage(message.RoleUser, "a"), message.NewTextMessage(message.RoleUser, "b"))
		require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Board: b,
			Changes: &agent.BoardChanges{Writer: 9, Seq: 1, Channels: map[string]int{"main": 0}}}), name)
		b.Append("main", message.NewTextMessage(message.RoleUser, "c"), message.NewTextMessage(message.RoleUser, "d"), message.NewTextMessage(message.RoleUser, "e"))
		b.Append("other", message.NewTextMessage(message.RoleUser, "x"))
		require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: 1, Board: b,
			Changes: &agent.BoardChanges{Writer: 9, Seq: 2, Base: 1, Channels: map[string]int{"main": 4, "other": 1}}}), name)
		got, err := s.Load(ctx, "run-1")
		require.NoError(t, err, name)
		assert.Equal(t, b.Channels, got.Board.Channels, name)
	}
}

// Records of the earlier format that a hostile or broken disk left load
// as corrupt (never a panic, a wait or another exec id's record), and the
// exec id's next save writes its log and removes the file.
func TestHostileEarlierFormat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good, err := Encode(agent.Checkpoint{ExecID: "run-1", Board: agent.NewBoard()})
	require.NoError(t, err)
	other, err := Encode(agent.Checkpoint{ExecID: "run-2", Board: agent.NewBoard()})
	require.NoError(t, err)
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	for why, plant := range map[string]func(file string) error{
		"another exec id": func(f string) error { return os.WriteFile(f, other, 0o640) },
		"not JSON":        func(f string) error { return os.WriteFile(f, []byte("\x00\xff{"), 0o640) },
		"a huge number": func(f string) error {
			return os.WriteFile(f, []byte(`{"exec_id":"run-1","iteration":1e999,"board":{}}`), 0o640)
		},
		"deep": func(f string) error {
			return os.WriteFile(f, []byte(`{"exec_id":"run-1","board":{"vars":{"x":`+deep+`}}}`), 0o640)
		},
		"trailing data":  func(f string) error { return os.WriteFile(f, append(append([]byte(nil), good...), "{}"...), 0o640) },
		"a named pipe":   func(f string) error { return syscall.Mkfifo(f, 0o640) },
		"a directory":    func(f string) error { return os.Mkdir(f, 0o750) },
		"a link outside": func(f string) error { return os.Symlink("/etc/passwd", f) },
		"a link to another record": func(f string) error {
			if err := os.WriteFile(filepath.Join(filepath.Dir(f), "run-2.json"), other, 0o640); err != nil {
				return err
			}
			return os.Symlink("run-2.json", f)
		},
	} {
		s, _ := newCountingStore(t, Config{})
		dir := filepath.Join(s.ws.Root(), DefaultPrefix)
		require.NoError(t, os.MkdirAll(dir, 0o750))
		file := filepath.Join(dir, "run-1.json")
		require.NoError(t, plant(file), why)
		got, err := s.Load(ctx, "run-1")
		require.Error(t, err, why)
		assert.Nil(t, got, why)
		assert.True(t, errors.Is(err, ErrCorrupt) || fault.Is(err, fault.Forbidden), "%s: %v", why, err)
		require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: 3, Board: agent.NewBoard()}), why)
		got, err = s.Load(ctx, "run-1")
		require.NoError(t, err, why)
		assert.Equal(t, 3, got.Iteration, why)
		if why != "a directory" {
			_, err = os.Lstat(file)
			assert.ErrorIs(t, err, os.ErrNotExist, "%s: migrated", why)
		}
		_, err = os.Stat("/etc/passwd")
		assert.NoError(t, err)
	}
}

// BenchmarkFoldAppends folds a snapshot with a 2,000-message channel and
// n deltas that each append one message to it; ns/delta stays flat as n
// grows when a fold costs the size of the log (docs/checkpoint.md, Limits).
func BenchmarkFoldAppends(b *testing.B) {
	for _, n := range []int{1000, 4096, 16384} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			board := agent.NewBoard()
			for i := range 2000 {
				board.Append("main", message.NewTextMessage(message.RoleUser, fmt.Sprintf("m%d", i)))
			}
			snap, err := Encode(agent.Checkpoint{ExecID: "run-1", Board: board})
			require.NoError(b, err)
			entries := []Entry{{EntrySnapshot, 1, snap}}
			for i := range n {
				data := fmt.Appendf(nil, `{"exec_id":"run-1","iteration":%d,"board":{},"timestamp":"0001-01-01T00:00:00Z","set":{},"channels_from":{"main":{"from":%d,"messages":[{"role":"user","parts":[{"type":"text","text":"d%d"}]}]}}}`, i, 2000+i, i)
				entries = append(entries, Entry{EntryDelta, uint64(i + 2), data})
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := Fold(entries); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/delta")
		})
	}
}
