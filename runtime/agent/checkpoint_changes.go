package agent

import "maps"

// BoardChanges tells a checkpoint store what changed on a checkpoint's
// board since an earlier checkpoint of the same exec id, so that the store
// may keep the change instead of the whole board. The board itself stays
// the truth: the changes only name what to read from it.
//
// A writer (one run of an engine) draws a random, non-zero Writer and
// numbers its checkpoints from 1 (Seq). Base is the Seq of the writer's
// last checkpoint that a store accepted, 0 when there is none; Vars and
// Channels name what changed on the board since that checkpoint:
//
//   - a name in Vars was set when the board has it, deleted when it has not;
//   - a channel in Channels maps to the index of its first message that is
//     new since Base: the messages before it are unchanged, the ones from it
//     on are appended (0 when the channel was created or rewritten); a
//     channel the board no longer has was removed.
//
// A store that holds the checkpoint Base of Writer as the newest record of
// the exec id may store the change (a delta); any other store, or one that
// lost track (a failed save, a restart, another writer), stores the whole
// board. A writer that cannot tell what changed sends no BoardChanges. So
// a store that ignores them is always right, only slower. A store reads
// the changes during Save and keeps neither them nor their maps: the
// writer reuses them for its next checkpoint.
type BoardChanges struct {
	Writer   uint64
	Seq      uint64
	Base     uint64
	Vars     map[string]struct{}
	Channels map[string]int
}

// Clone returns a deep copy of c; nil stays nil.
func (c *BoardChanges) Clone() *BoardChanges {
	if c == nil {
		return nil
	}
	out := *c
	out.Vars = maps.Clone(c.Vars)
	out.Channels = maps.Clone(c.Channels)
	return &out
}
