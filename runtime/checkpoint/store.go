package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/workspace"
)

// DefaultPrefix is the directory of the workspace that holds the records
// when no prefix is set.
const DefaultPrefix = "agent/checkpoints"

// tmpDir is the directory, under the prefix, of records being written.
const tmpDir = ".tmp"

// staleTmpAge is the age past which a temporary record is an orphan (its
// save crashed or could not remove it): no save takes that long, and it
// leaves room for clocks of processes sharing the workspace to disagree.
const staleTmpAge = time.Hour

// sweepTimeout bounds the sweep of orphans after a store's first save.
const sweepTimeout = 5 * time.Second

// Store keeps checkpoints in a workspace. In a local workspace
// (*workspace.Local) each exec id has an append-only log,
// "<prefix>/<exec_id>.log": a save appends one checkpointed entry, a
// snapshot or a delta (Chain), with one write and, under SyncWave, one
// fsync. Records of the earlier format, "<prefix>/<exec_id>.json", are
// read, and replaced by a log at the exec id's next save. Any other
// workspace keeps that earlier format: one JSON file per exec id, replaced
// through a temporary file and a rename. A Store is safe for concurrent
// use; one process writes an exec id at a time. It does not close the
// workspace; Close releases what the store holds itself.
type Store struct {
	ws     workspace.Workspace
	prefix string
	cfg    Config
	// swept is set once the store's first save has removed the orphans
	// of earlier processes (sweep).
	swept atomic.Bool
	logs  *logs // nil when ws is not local: the earlier format
}

// Config is the configuration of a Store; the zero value is the default.
type Config struct {
	// Prefix is the directory of the records in the workspace (NewStore).
	Prefix string
	// Sync says when appended entries are flushed to the disk; "" is
	// SyncWave.
	Sync Sync
	// Policy says when a save is a snapshot; the zero value is
	// DefaultPolicy.
	Policy Policy
}

var (
	_ agent.CheckpointStore   = (*Store)(nil)
	_ agent.CheckpointLister  = (*Store)(nil)
	_ agent.CheckpointDeleter = (*Store)(nil)
)

// NewStore returns a store keeping its records under prefix in ws, which
// must not be nil. Leading and trailing '/' are trimmed from prefix; an
// empty prefix is DefaultPrefix. A prefix that leaves the workspace (".."
// that climbs out) is Forbidden, as workspace.CleanPath has it; one that is
// otherwise not a clean relative path (with "." or ".." elements, empty
// elements or a backslash) is a Validation error.
func NewStore(ws workspace.Workspace, prefix string) (*Store, error) {
	return NewStoreWithConfig(ws, Config{Prefix: prefix})
}

// NewStoreWithConfig is NewStore with a Config; an unknown Sync is a
// Validation error.
func NewStoreWithConfig(ws workspace.Workspace, cfg Config) (*Store, error) {
	const op = "new checkpoint store"
	if ws == nil {
		return nil, fault.New(fault.Validation, op, "workspace is required")
	}
	p, err := cleanPrefix(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if cfg.Sync == "" {
		cfg.Sync = SyncWave
	}
	if err := cfg.Sync.validate(); err != nil {
		return nil, err
	}
	cfg.Prefix = p
	s := &Store{ws: ws, prefix: p, cfg: cfg}
	if local, ok := ws.(*workspace.Local); ok {
		s.logs = newLogs(s, local)
	}
	return s, nil
}

func cleanPrefix(prefix string) (string, error) {
	p := strings.Trim(prefix, "/")
	if p == "" {
		return DefaultPrefix, nil
	}
	const op = "new checkpoint store"
	clean, err := workspace.CleanPath("prefix", p)
	if err != nil {
		return "", fault.Wrap(fault.KindOr(err, fault.Validation), err, op, "")
	}
	if clean != p {
		return "", fault.New(fault.Validation, op, "prefix %q must be a clean relative path", prefix)
	}
	return p, nil
}

// Sync returns the store's sync setting.
func (s *Store) Sync() Sync { return s.cfg.Sync }

// Workspace returns the workspace the store keeps its records in.
func (s *Store) Workspace() workspace.Workspace { return s.ws }

// Prefix returns the directory of the records in the workspace.
func (s *Store) Prefix() string { return s.prefix }

// Path returns the workspace path of the live record of execID in the
// format the store writes: its log in a local workspace, else its JSON
// file.
func (s *Store) Path(execID string) string {
	if s.logs != nil {
		return s.logPath(execID)
	}
	return s.jsonPath(execID)
}

func (s *Store) jsonPath(execID string) string { return s.prefix + "/" + execID + ".json" }
func (s *Store) logPath(execID string) string  { return s.prefix + "/" + execID + logSuffix }

// Save validates cp and stores it. In a local workspace it appends one
// entry to the exec id's log (a delta when cp.Changes follow the newest
// entry, else a snapshot; DefaultPolicy), with one write and, under
// SyncWave, one fsync; a torn tail a crash left is cut first, and a
// snapshot of a large log replaces it through "<prefix>/.tmp/<exec_id>.<unix
// nanoseconds>-<16 hex>.log.tmp", renamed into place. In any other
// workspace the record is written to "<prefix>/.tmp/<exec_id>.<unix
// nanoseconds>-<16 hex>.json.tmp" and renamed over the live file; if the
// rename fails, the temporary file is removed. A reader sees the old record
// or the new one; of two overlapping saves, the later to finish wins. After
// its first save a Store also removes the temporary files that earlier
// processes left behind: those whose name says they were written more than
// an hour ago. Names without a time (written by earlier versions, or by
// hand) are left alone: a live save of another process may be writing one.
func (s *Store) Save(ctx context.Context, cp agent.Checkpoint) error {
	if s.logs != nil {
		return s.logs.save(ctx, &cp)
	}
	data, err := Encode(cp)
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	now := time.Now()
	tmp := s.prefix + "/" + tmpDir + "/" + cp.ExecID + "." + strconv.FormatInt(now.UnixNano(), 10) + "-" + randomHex() + ".json.tmp"
	if err := s.ws.Write(ctx, tmp, data); err != nil {
		return fmt.Errorf("save checkpoint %q: %w", cp.ExecID, err)
	}
	if err := s.ws.Rename(ctx, tmp, s.jsonPath(cp.ExecID)); err != nil {
		// The cleanup must run even when ctx is what made the rename fail.
		_ = s.ws.Delete(context.WithoutCancel(ctx), tmp)
		return fmt.Errorf("save checkpoint %q: %w", cp.ExecID, err)
	}
	s.sweepOnce(ctx, now)
	return nil
}

// sweepOnce removes, at a store's first save, the orphans of earlier
// processes.
func (s *Store) sweepOnce(ctx context.Context, now time.Time) {
	if !s.swept.Swap(true) {
		// Its own ctx: the save is done, and its deadline is not the sweep's.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sweepTimeout)
		defer cancel()
		s.sweep(sctx, now.Add(-staleTmpAge))
	}
}

// sweep removes the temporary records whose name says they were written
// before cutoff; it is best effort (a file it cannot list or remove stays,
// and the next process tries again).
func (s *Store) sweep(ctx context.Context, cutoff time.Time) {
	dir := s.prefix + "/" + tmpDir
	names, err := s.ws.List(ctx, dir)
	if err != nil {
		return
	}
	for _, n := range names {
		if strings.HasSuffix(n, "/") {
			continue
		}
		if at, ok := tmpTime(n); ok && at.Before(cutoff) {
			_ = s.ws.Delete(ctx, dir+"/"+n)
		}
	}
}

// tmpTime reads the time in a temporary record's name,
// "<exec_id>.<unix nanoseconds>-<16 hex>.json.tmp" (or ".log.tmp", a log
// being compacted).
func tmpTime(name string) (time.Time, bool) {
	base, ok := strings.CutSuffix(name, ".json.tmp")
	if !ok {
		if base, ok = strings.CutSuffix(name, logSuffix+".tmp"); !ok {
			return time.Time{}, false
		}
	}
	stamp := base[strings.LastIndexByte(base, '.')+1:]
	nanos, _, ok := strings.Cut(stamp, "-")
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(nanos, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// Load returns the newest record of execID, or (nil, nil) when there is
// none. A record that cannot be read back is a *CorruptError (kind
// Internal, errors.Is ErrCorrupt).
func (s *Store) Load(ctx context.Context, execID string) (*agent.Checkpoint, error) {
	if err := ValidateExecID(execID); err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	if s.logs != nil {
		cp, found, err := s.logs.load(ctx, execID)
		if found || err != nil {
			return cp, err
		}
	}
	live := s.jsonPath(execID)
	data, err := s.ws.Read(ctx, live)
	if fault.Is(err, fault.NotFound) {
		return nil, nil
	}
	if fault.Is(err, fault.Validation) { // a directory or a named pipe where the record should be
		return nil, fmt.Errorf("load checkpoint %q: %w", execID, &CorruptError{Where: live, Reason: "not a regular file"})
	}
	if err != nil {
		return nil, fmt.Errorf("load checkpoint %q: %w", execID, err)
	}
	cp, reason := decode(data)
	if reason == "" && cp.ExecID != execID {
		reason = fmt.Sprintf("it holds exec id %q", cp.ExecID)
	}
	if reason != "" {
		return nil, &CorruptError{Where: live, Reason: reason}
	}
	return cp, nil
}

// List returns the exec ids that have a record, sorted: the names of the
// "*.json" files directly under the prefix, without the suffix. The
// temporary directory and other files are ignored; a missing prefix
// directory lists nothing.
func (s *Store) List(ctx context.Context) ([]string, error) {
	names, err := s.ws.List(ctx, s.prefix)
	if fault.Is(err, fault.NotFound) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	ids := make([]string, 0, len(names))
	for _, n := range names {
		id, ok := strings.CutSuffix(n, ".json")
		if !ok && s.logs != nil {
			id, ok = strings.CutSuffix(n, logSuffix)
		}
		if ok && ValidateExecID(id) == nil {
			ids = append(ids, id)
		}
	}
	// Cutting the suffix can change the order ("a-b.json" < "a.json" but
	// "a" < "a-b"); an exec id migrating has both files.
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Delete removes the live record of execID. A missing record is not an
// error.
func (s *Store) Delete(ctx context.Context, execID string) error {
	if err := ValidateExecID(execID); err != nil {
		return fmt.Errorf("delete checkpoint: %w", err)
	}
	if s.logs != nil {
		if err := s.logs.delete(ctx, execID); err != nil {
			return fmt.Errorf("delete checkpoint %q: %w", execID, err)
		}
	}
	err := s.ws.Delete(ctx, s.jsonPath(execID))
	if err != nil && !fault.Is(err, fault.NotFound) {
		return fmt.Errorf("delete checkpoint %q: %w", execID, err)
	}
	return nil
}

// Close flushes what SyncTurn left unsynced and releases the store's own
// handle on its directory; the workspace stays open. It is idempotent;
// Save after Close is NotAvailable for a local workspace.
func (s *Store) Close() error {
	if s.logs == nil {
		return nil
	}
	return s.logs.close()
}
