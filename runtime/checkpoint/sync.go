package checkpoint

import "github.com/corral-rt/corral/fault"

// Sync says when a local Store flushes what it appends to the disk
// (fsync). Creating a log and compacting one (a new file renamed into
// place) are flushed under every setting, so that a file never reads as
// the wrong one after a power failure. A process that crashes loses
// nothing a save returned under any setting: an append is written to the
// operating system before Save returns.
type Sync string

// The Sync settings.
const (
	// SyncWave flushes every save before it returns: one fsync per save
	// (per wave of a graph run). A power failure loses at most the saves
	// that had not returned.
	SyncWave Sync = "wave"
	// SyncTurn flushes the saves of runs when a session record is saved
	// (keys with SessionKeyPrefix, which the session manager saves as a
	// turn ends), and at Close: about four fsyncs per turn, whatever its
	// number of waves. A power failure
	// loses the waves since the session's last turn ended; the session
	// resumes at that turn.
	SyncTurn Sync = "turn"
	// SyncNone never flushes appends: the operating system writes them in
	// its own time (about 30 seconds on Linux). A power failure loses what
	// it had not written, down to a log's last snapshot or the state
	// before the log was created; what is left reads back whole (torn
	// tails are cut).
	SyncNone Sync = "none"
)

func (s Sync) validate() error {
	switch s {
	case SyncWave, SyncTurn, SyncNone:
		return nil
	}
	return fault.New(fault.Validation, "new checkpoint store", "sync %q: want wave, turn or none", string(s))
}
