package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/corral-rt/corral/internal/jsonval"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// EntryKind is the kind of an Entry.
type EntryKind uint8

// The kinds of entries.
const (
	// EntrySnapshot holds a whole record, exactly as Encode writes it.
	EntrySnapshot EntryKind = 1
	// EntryDelta holds a delta record: what a save changed relative to the
	// state of the entries before it (see the package documentation).
	EntryDelta EntryKind = 2
)

func (k EntryKind) String() string {
	switch k {
	case EntrySnapshot:
		return "snapshot"
	case EntryDelta:
		return "delta"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// Entry is one stored item of an exec id's history. A store keeps, per
// exec id, a snapshot and the deltas that follow it, in order; Fold turns
// them back into the checkpoint. Data is opaque to a store: it persists
// Data, Kind and Seq as they are. Seq numbers an exec id's entries from 1:
// a delta's is one more than the entry before it; a snapshot's is greater
// than the entry before it (a failed save may leave a gap before one).
type Entry struct {
	Kind EntryKind
	Seq  uint64
	Data []byte
}

// deltaRecord is a delta's Data as it is read back: the checkpoint's
// fields besides its board (the board field is written empty), and the
// board's changes.
type deltaRecord struct {
	agent.Checkpoint
	Set      map[string]any          `json:"set"`
	Unset    []string                `json:"unset"`
	Channels map[string]channelDelta `json:"channels_from"`
	Drop     []string                `json:"drop"`
}

// channelDelta is one channel's change: keep the first From messages and
// append Messages.
type channelDelta struct {
	From     int               `json:"from"`
	Messages []message.Message `json:"messages"`
}

// emptyBoard stands for the board in a delta record's head.
var emptyBoard = agent.Board{}

// appendDelta appends the delta record of cp, whose Changes name what
// changed, or reports false when it is not written without json.Marshal
// (a value outside jsonval's set, invalid raw JSON, a channel index past
// the channel's end): the caller then stores a snapshot, which writes the
// value or names the problem. cp has passed the checks of encode.
func appendDelta(dst []byte, cp *agent.Checkpoint) ([]byte, bool) {
	head := *cp
	head.Board = &emptyBoard
	dst, ok := appendRecord(dst, &head, math.MaxInt)
	if !ok {
		return dst, false
	}
	dst = dst[:len(dst)-1] // the head's closing brace
	ch := cp.Changes
	var buf [16]string
	names := jsonval.SortedKeys(buf[:0], ch.Vars)
	var unset []string
	dst = append(dst, `,"set":{`...)
	first := true
	for _, name := range names {
		v, ok := cp.Board.Vars[name]
		if !ok {
			unset = append(unset, name)
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsonval.AppendString(dst, name)
		dst = append(dst, ':')
		if dst, ok = jsonval.Append(dst, v); !ok {
			return dst, false
		}
	}
	dst = append(dst, '}')
	if len(unset) > 0 {
		dst = append(dst, `,"unset":`...)
		dst = appendStrings(dst, unset)
	}
	return appendChannelDeltas(dst, cp)
}

// appendChannelDeltas appends the channels part of a delta record and its
// closing brace.
func appendChannelDeltas(dst []byte, cp *agent.Checkpoint) ([]byte, bool) {
	var buf [8]string
	names := jsonval.SortedKeys(buf[:0], cp.Changes.Channels)
	var drop []string
	first := true
	for _, name := range names {
		msgs, ok := cp.Board.Channels[name]
		if !ok {
			drop = append(drop, name)
			continue
		}
		from := cp.Changes.Channels[name]
		if from < 0 || from > len(msgs) {
			return dst, false
		}
		if first {
			dst = append(dst, `,"channels_from":{`...)
			first = false
		} else {
			dst = append(dst, ',')
		}
		dst = jsonval.AppendString(dst, name)
		dst = append(dst, `:{"from":`...)
		dst = strconv.AppendInt(dst, int64(from), 10)
		dst = append(dst, `,"messages":`...)
		if dst, ok = appendMessages(dst, msgs[from:], math.MaxInt); !ok {
			return dst, false
		}
		dst = append(dst, '}')
	}
	if !first {
		dst = append(dst, '}')
	}
	if len(drop) > 0 {
		dst = append(dst, `,"drop":`...)
		dst = appendStrings(dst, drop)
	}
	return append(dst, '}'), true
}

// decodeDelta reads a delta record; a non-empty reason says why it is
// corrupt.
func decodeDelta(data []byte) (*deltaRecord, string) {
	var d deltaRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		return nil, "invalid delta: " + err.Error()
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "invalid delta: trailing data after the record"
	}
	if err := ValidateExecID(d.ExecID); err != nil {
		return nil, "invalid delta: " + err.Error()
	}
	if err := d.Validate(); err != nil {
		return nil, "invalid delta: " + err.Error()
	}
	return &d, ""
}

// apply makes the delta's changes on cp, which holds the state of the
// entries before it; a non-empty reason says why they do not fit.
func (d *deltaRecord) apply(cp *agent.Checkpoint) string {
	if d.ExecID != cp.ExecID {
		return fmt.Sprintf("a delta of exec id %q follows one of %q", d.ExecID, cp.ExecID)
	}
	board := cp.Board
	*cp = d.Checkpoint
	cp.Board = board
	if board.Vars == nil {
		board.Vars = map[string]any{}
	}
	for k, v := range d.Set {
		board.Vars[k] = v
	}
	for _, k := range d.Unset {
		delete(board.Vars, k)
	}
	if board.Channels == nil {
		board.Channels = map[string][]message.Message{}
	}
	for name, c := range d.Channels {
		old := board.Channels[name]
		if c.From < 0 || c.From > len(old) {
			return fmt.Sprintf("a delta appends to channel %q from message %d, past its %d", name, c.From, len(old))
		}
		// The board is the fold's own (decoded from the snapshot): the
		// channel is cut and appended to in place, so that a run of
		// appends folds in the time of its messages, not a copy of the
		// channel each.
		msgs := append(old[:c.From], c.Messages...)
		if msgs == nil && c.Messages != nil {
			msgs = []message.Message{} // an empty channel, not a null one
		}
		board.Channels[name] = msgs
	}
	for _, name := range d.Drop {
		delete(board.Channels, name)
	}
	return ""
}

// Fold returns the checkpoint that entries, an exec id's entries in
// order, hold: the last snapshot with the deltas after it applied. Entries
// before the last snapshot are ignored. No entries fold to (nil, nil). A
// delta without a snapshot before it, a delta whose Seq does not follow
// the entry before it, or an entry that does not decode is a
// *CorruptError (Where left empty for the caller to fill).
func Fold(entries []Entry) (*agent.Checkpoint, error) {
	start := -1
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Kind == EntrySnapshot {
			start = i
			break
		}
	}
	if start < 0 {
		if len(entries) == 0 {
			return nil, nil
		}
		return nil, &CorruptError{Reason: "deltas without a snapshot before them"}
	}
	cp, reason := decode(entries[start].Data)
	if reason != "" {
		return nil, &CorruptError{Reason: fmt.Sprintf("snapshot %d: %s", entries[start].Seq, reason)}
	}
	prev := entries[start].Seq
	for _, e := range entries[start+1:] {
		if e.Kind != EntryDelta || e.Seq != prev+1 {
			return nil, &CorruptError{Reason: fmt.Sprintf("%s %d follows entry %d", e.Kind, e.Seq, prev)}
		}
		d, reason := decodeDelta(e.Data)
		if reason == "" {
			reason = d.apply(cp)
		}
		if reason != "" {
			return nil, &CorruptError{Reason: fmt.Sprintf("delta %d: %s", e.Seq, reason)}
		}
		prev = e.Seq
	}
	return cp, nil
}
