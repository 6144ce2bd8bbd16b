package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/workspace"
)

// logSuffix ends the name of an exec id's log.
const logSuffix = ".log"

// compactBytes is the least size of a log that a snapshot replaces rather
// than follows: a log grows by appending until it is both this large and
// four times the new snapshot (256 KiB keeps the loads of small records
// cheap; four times keeps the rewrites of large ones rare).
const compactBytes = 256 << 10

// logs is the part of a Store that writes logs in a local workspace.
type logs struct {
	s     *Store
	local *workspace.Local
	wrap  func(logDir) logDir // tests: counts what the store asks of the disk
	limit int                 // tests: maxStates when > 0

	mu     sync.Mutex
	dir    logDir // opened at the first save
	closed bool
	busy   sync.WaitGroup // saves using dir: Close waits for them
	ids    map[string]*logState
	dirty  map[string]struct{} // SyncTurn: exec ids appended to and not yet flushed
}

// logState is what the store knows of one exec id's log.
type logState struct {
	mu      sync.Mutex
	gone    bool  // deleted: a save that finds it takes a new state
	ready   bool  // the fields below are read from the file
	exists  bool  // the file exists
	size    int64 // the length of its whole frames
	file    int64 // the file's length when last read or written: another length means another writer
	torn    bool  // bytes follow size: cut before appending
	rewrite bool  // the file is not a readable log: replace it
	chain   Chain
}

func newLogs(s *Store, local *workspace.Local) *logs {
	return &logs{s: s, local: local, ids: map[string]*logState{}, dirty: map[string]struct{}{}}
}

// openDir returns the directory of the logs, opening it (and creating it)
// at the first call, and counts the caller in l.busy: it calls
// l.busy.Done once done with it.
func (l *logs) openDir() (logDir, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fault.New(fault.NotAvailable, "save checkpoint", "the store is closed")
	}
	if l.dir != nil {
		l.busy.Add(1)
		return l.dir, nil
	}
	root, err := os.OpenRoot(l.local.Root())
	if err != nil {
		return nil, fsError(err, l.s.prefix)
	}
	defer root.Close()
	if err := root.MkdirAll(l.s.prefix, 0o750); err != nil {
		return nil, fsError(err, l.s.prefix)
	}
	sub, err := root.OpenRoot(l.s.prefix)
	if err != nil {
		return nil, fsError(err, l.s.prefix)
	}
	var dir logDir = rootDir{sub}
	if l.wrap != nil {
		dir = l.wrap(dir)
	}
	l.dir = dir
	l.busy.Add(1)
	return dir, nil
}

// fsError gives a file system error its kind.
func fsError(err error, where string) error {
	const op = "checkpoint log"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fault.Wrap(fault.NotFound, err, op, "%s", where)
	case errors.Is(err, fs.ErrPermission):
		return fault.Wrap(fault.Forbidden, err, op, "%s", where)
	case strings.Contains(err.Error(), "escapes"):
		return fault.Wrap(fault.Forbidden, err, op, "%s: leaves the workspace", where)
	}
	return fault.Wrap(fault.Internal, err, op, "%s", where)
}

// maxStates is the number of exec ids whose state a store keeps before it
// forgets some: a forgotten exec id's next save reads its log again.
const maxStates = 4096

// state returns the state of execID, creating it.
func (l *logs) state(execID string) *logState {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.ids[execID]
	if st == nil {
		if len(l.ids) >= l.maxStates() {
			l.forgetLocked()
		}
		st = &logState{}
		l.ids[execID] = st
	}
	return st
}

func (l *logs) maxStates() int {
	if l.limit > 0 {
		return l.limit
	}
	return maxStates
}

// forgetLocked drops about a quarter of the states, those not in use (a
// save holding one keeps it); l.mu is held. A save that then finds its
// state gone takes a new one.
func (l *logs) forgetLocked() {
	n := len(l.ids) / 4
	for id, st := range l.ids {
		if n <= 0 {
			return
		}
		if st.mu.TryLock() {
			st.gone = true
			delete(l.ids, id)
			st.mu.Unlock()
			n--
		}
	}
}

func (l *logs) save(ctx context.Context, cp *agent.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return fault.FromContext(err, "save checkpoint")
	}
	if !plainExecID(cp.ExecID) {
		if err := ValidateExecID(cp.ExecID); err != nil {
			return fmt.Errorf("save checkpoint: %w", err)
		}
	}
	dir, err := l.openDir()
	if err != nil {
		return fmt.Errorf("save checkpoint %q: %w", cp.ExecID, err)
	}
	defer l.busy.Done()
	for {
		st := l.state(cp.ExecID)
		st.mu.Lock()
		if st.gone {
			st.mu.Unlock()
			continue
		}
		err = l.saveLocked(ctx, dir, st, cp)
		st.mu.Unlock()
		break
	}
	if err != nil {
		return err
	}
	if l.s.cfg.Sync == SyncTurn && strings.HasPrefix(cp.ExecID, SessionKeyPrefix) {
		if err := l.flushDirty(dir); err != nil {
			return fmt.Errorf("save checkpoint %q: %w", cp.ExecID, err)
		}
	}
	l.s.sweepOnce(ctx, time.Now())
	return nil
}

// saveLocked writes cp's entry; st.mu is held.
func (l *logs) saveLocked(ctx context.Context, dir logDir, st *logState, cp *agent.Checkpoint) error {
	for retried := false; ; retried = true {
		if !st.ready {
			if err := l.scan(ctx, st, cp.ExecID); err != nil {
				return fmt.Errorf("save checkpoint %q: %w", cp.ExecID, err)
			}
		}
		e, err := st.chain.Next(cp)
		if err == nil && e.Kind == EntryDelta && l.tooLong(st, e) {
			e, err = st.chain.Snapshot(cp) // the log is not to outgrow max_file_bytes
		}
		if err != nil {
			return fmt.Errorf("save checkpoint: %w", err)
		}
		if max := l.local.MaxFileBytes(); int64(len(logMagic)+frameHeader+len(e.Data)) > max {
			// A log a load could not read back: refused, as the workspace
			// refuses to write such a file.
			return fault.New(fault.BudgetExceeded, "save checkpoint", "%q: the record is %d bytes, a log holds at most %d (the workspace's max_file_bytes)", cp.ExecID, len(e.Data), max)
		}
		err = l.write(dir, st, cp.ExecID, e)
		if err == nil {
			st.chain.Commit(e, cp)
			return nil
		}
		st.chain.Lost(e)
		st.ready = false // read the file again: it may hold a part of e
		if !errors.Is(err, errStale) || retried {
			return fmt.Errorf("save checkpoint %q: %w", cp.ExecID, err)
		}
	}
}

// errStale says that a log is not as the store last left it: another
// store wrote it since. The save reads it again and stores a snapshot.
var errStale = fault.New(fault.Conflict, "checkpoint log", "written by another store since this one read it")

// scan reads what the store needs to know of execID's log from the file.
func (l *logs) scan(ctx context.Context, st *logState, execID string) error {
	st.exists, st.size, st.file, st.torn, st.rewrite = false, 0, 0, false, false
	st.chain = ResumeChain(l.s.cfg.Policy, 0)
	data, err := l.s.ws.Read(ctx, l.s.logPath(execID))
	switch {
	case fault.Is(err, fault.NotFound):
		st.ready = true
		return nil
	case fault.Is(err, fault.BudgetExceeded), fault.Is(err, fault.Validation):
		// Too long to read back (max_file_bytes was larger when it was
		// written), or not a file (a named pipe planted at its name): the
		// next save replaces it.
		st.ready, st.exists, st.rewrite = true, true, true
		return nil
	case err != nil:
		return err
	}
	sc, reason := readLog(data, int(l.local.MaxFileBytes()), l.s.cfg.Sync == SyncWave)
	st.ready, st.exists = true, true
	st.size, st.file, st.torn = int64(sc.end), int64(len(data)), sc.torn
	st.rewrite = reason != "" || sc.end < len(logMagic)
	st.chain = ResumeChain(l.s.cfg.Policy, sc.lastSeq)
	return nil
}

// write stores e: appended to the log, or as the first entry of a new log
// (the log's first save, a log that is not readable, a snapshot that
// compacts a large log).
func (l *logs) write(dir logDir, st *logState, execID string, e Entry) error {
	name := execID + logSuffix
	switch {
	case !st.exists:
		err := l.create(dir, name, e)
		if !errors.Is(err, fs.ErrExist) {
			if err == nil {
				st.exists, st.size, st.torn = true, int64(len(logMagic)+frameHeader+len(e.Data)), false
				st.file = st.size
				_ = dir.Remove(execID + ".json") // migrated: the log holds the newest record
			}
			return err
		}
	case st.rewrite, e.Kind == EntrySnapshot && (st.size >= max(compactBytes, 4*int64(len(e.Data))) || l.tooLong(st, e)):
	default:
		if err := l.append(dir, st, name, execID, e); !errors.Is(err, errNotPlain) {
			return err
		}
	}
	if err := l.replace(dir, name, execID, e); err != nil {
		return err
	}
	st.exists, st.rewrite, st.size, st.torn = true, false, int64(len(logMagic)+frameHeader+len(e.Data)), false
	st.file = st.size
	_ = dir.Remove(execID + ".json")
	return nil
}

// tooLong reports whether appending e would take the log past half the
// workspace's max_file_bytes, which a load must be able to read: the log
// is then compacted instead, to a snapshot alone.
func (l *logs) tooLong(st *logState, e Entry) bool {
	return st.size+int64(frameHeader+len(e.Data)) > l.local.MaxFileBytes()/2
}

// append appends e's frame to the log, cutting a torn tail first, and
// flushes it under SyncWave.
func (l *logs) append(dir logDir, st *logState, name, execID string, e Entry) error {
	f, err := openPlain(dir, name, st.file)
	if err != nil {
		return err
	}
	frame := appendFrame(make([]byte, 0, frameHeader+len(e.Data)), e)
	if st.torn {
		err = f.Truncate(st.size)
	}
	if err == nil {
		_, err = f.Write(frame)
	}
	if err == nil && l.s.cfg.Sync == SyncWave {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fsError(err, name)
	}
	st.size += int64(len(frame))
	st.file, st.torn = st.size, false
	if l.s.cfg.Sync == SyncTurn {
		l.mu.Lock()
		l.dirty[execID] = struct{}{}
		l.mu.Unlock()
	}
	return nil
}

// create writes a new log holding e at name, which must not exist, and
// flushes it and the directory. A failure leaves no file behind.
func (l *logs) create(dir logDir, name string, e Entry) error {
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fsError(err, name)
	}
	if err := writeNew(f, e); err != nil {
		_ = dir.Remove(name)
		return fsError(err, name)
	}
	return fsErrorOrNil(dir.SyncDir("."), name)
}

// replace writes a new log holding e to a temporary file, flushes it,
// renames it over the log at name and flushes the directory.
func (l *logs) replace(dir logDir, name, execID string, e Entry) error {
	if err := dir.MkdirAll(tmpDir); err != nil {
		return fsError(err, tmpDir)
	}
	tmp := tmpDir + "/" + execID + "." + strconv.FormatInt(time.Now().UnixNano(), 10) + "-" + randomHex() + logSuffix + ".tmp"
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return fsError(err, tmp)
	}
	err = writeNew(f, e)
	if err == nil {
		err = dir.Rename(tmp, name)
	}
	if err != nil {
		_ = dir.Remove(tmp)
		return fsError(err, name)
	}
	return fsErrorOrNil(dir.SyncDir("."), name)
}

// writeNew writes the magic and e's frame to f, flushes and closes it.
func writeNew(f logFile, e Entry) error {
	buf := make([]byte, 0, len(logMagic)+frameHeader+len(e.Data))
	buf = appendFrame(append(buf, logMagic...), e)
	_, err := f.Write(buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func fsErrorOrNil(err error, where string) error {
	if err == nil {
		return nil
	}
	return fsError(err, where)
}

// flushDirty flushes the logs appended to since they were last flushed
// (SyncTurn).
func (l *logs) flushDirty(dir logDir) error {
	l.mu.Lock()
	ids := make([]string, 0, len(l.dirty))
	for id := range l.dirty {
		ids = append(ids, id)
	}
	clear(l.dirty)
	l.mu.Unlock()
	var errs []error
	for _, id := range ids {
		f, err := dir.OpenFile(id+logSuffix, os.O_WRONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since
		}
		if err == nil {
			err = f.Sync()
			_ = f.Close()
		}
		if err != nil {
			errs = append(errs, fsError(err, id+logSuffix))
		}
	}
	return errors.Join(errs...)
}

// load reads execID's log; found is false when it has none, or one whose
// creation a crash interrupted (the record, if any, is then the JSON file
// of the earlier format).
func (l *logs) load(ctx context.Context, execID string) (*agent.Checkpoint, bool, error) {
	where := l.s.logPath(execID)
	data, err := l.s.ws.Read(ctx, where)
	if fault.Is(err, fault.NotFound) {
		return nil, false, nil
	}
	if fault.Is(err, fault.Validation) { // a directory or a named pipe where the log should be
		return nil, true, fmt.Errorf("load checkpoint %q: %w", execID, &CorruptError{Where: where, Reason: "not a regular file"})
	}
	if err != nil {
		return nil, true, fmt.Errorf("load checkpoint %q: %w", execID, err)
	}
	sc, reason := readLog(data, int(l.local.MaxFileBytes()), l.s.cfg.Sync == SyncWave)
	if reason != "" {
		return nil, true, &CorruptError{Where: where, Reason: reason}
	}
	if len(sc.entries) == 0 {
		return nil, false, nil
	}
	cp, err := Fold(sc.entries)
	var ce *CorruptError
	if errors.As(err, &ce) {
		ce.Where = where
		return nil, true, ce
	}
	if err == nil && cp.ExecID != execID {
		return nil, true, &CorruptError{Where: where, Reason: fmt.Sprintf("it holds exec id %q", cp.ExecID)}
	}
	return cp, true, err
}

// delete removes execID's log; a missing log is not an error.
func (l *logs) delete(ctx context.Context, execID string) error {
	l.mu.Lock()
	st := l.ids[execID]
	delete(l.ids, execID)
	delete(l.dirty, execID)
	l.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.gone = true
	}
	err := l.s.ws.Delete(ctx, l.s.logPath(execID))
	if err != nil && !fault.Is(err, fault.NotFound) {
		return err
	}
	return nil
}

// close flushes the logs SyncTurn left unflushed and closes the directory.
func (l *logs) close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	dir := l.dir
	l.mu.Unlock()
	if dir == nil {
		return nil
	}
	l.busy.Wait() // the saves that opened dir before Close
	err := l.flushDirty(dir)
	return errors.Join(err, dir.Close())
}
