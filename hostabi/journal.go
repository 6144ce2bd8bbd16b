package hostabi

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"sync"

	"github.com/corral-rt/corral/fault"
)

// JournalVersion is the version of the journal's JSON form.
const JournalVersion = 1

// Entry is one journaled host call: which node called which function with
// which arguments, and what it got back (a result or an error).
type Entry struct {
	Seq    int             `json:"seq"`              // 1, 2, ... in the order the calls returned
	Node   string          `json:"node"`             // the calling node
	Func   string          `json:"func"`             // the host function
	Args   json.RawMessage `json:"args"`             // the argument array, compact
	Result json.RawMessage `json:"result,omitempty"` // the JSON result; absent when Err is set
	Err    *ErrorInfo      `json:"error,omitempty"`  // the error the script saw
}

// clone returns a copy of e that shares nothing with it.
func (e Entry) clone() Entry {
	out := e
	out.Args = bytes.Clone(e.Args)
	out.Result = bytes.Clone(e.Result)
	if e.Err != nil {
		info := *e.Err
		out.Err = &info
	}
	return out
}

// MaxJournalBytes bounds the arguments and results one journal holds. A
// run's journal is in memory for the length of the run, so a script that
// calls a non-deterministic host function in a loop (host.now, host.random)
// would otherwise grow it without bound: once a journal holds this much,
// the dispatcher refuses further non-deterministic calls with a
// max_journal_bytes *sandbox.LimitError (BudgetExceeded).
const MaxJournalBytes = 64 << 20

// entryOverhead is what Full counts for an entry besides its arguments
// and result: the Entry itself and its node and function names.
const entryOverhead = 128

// Journal records the non-deterministic host calls of a run, in order, so
// that the run can be replayed. It is in memory and safe for concurrent
// use; the methods of a nil *Journal do nothing (Record returns 0).
type Journal struct {
	mu      sync.Mutex
	entries []Entry
	bytes   int64 // what the entries hold, as Full counts it
	tape    *tape // the recording a replaying journal answers from; nil records only
}

// NewJournal returns an empty journal.
func NewJournal() *Journal { return &Journal{} }

// Record appends a copy of e, numbering it: the Seq of e is ignored and
// the entry's Seq (returned) is one more than the previous entry's.
func (j *Journal) Record(e Entry) int {
	if j == nil {
		return 0
	}
	e = e.clone()
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Seq = len(j.entries) + 1
	j.entries = append(j.entries, e)
	j.bytes += entrySize(e)
	return e.Seq
}

// Full reports whether the journal holds MaxJournalBytes or more.
func (j *Journal) Full() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.bytes >= MaxJournalBytes
}

func entrySize(e Entry) int64 {
	n := int64(entryOverhead + len(e.Node) + len(e.Func) + len(e.Args) + len(e.Result))
	if e.Err != nil {
		n += int64(len(e.Err.Code) + len(e.Err.Message))
	}
	return n
}

// Bytes returns what the entries hold, as Full counts it.
func (j *Journal) Bytes() int64 {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.bytes
}

// Entries returns copies of the entries, in order.
func (j *Journal) Entries() []Entry {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Entry, len(j.entries))
	for i, e := range j.entries {
		out[i] = e.clone()
	}
	return out
}

// Len returns the number of entries.
func (j *Journal) Len() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.entries)
}

// journalWire is the JSON form of a journal.
type journalWire struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// MarshalJSON writes {"version": 1, "entries": [...]}.
func (j *Journal) MarshalJSON() ([]byte, error) {
	entries := j.Entries()
	if entries == nil {
		entries = []Entry{}
	}
	return json.Marshal(journalWire{Version: JournalVersion, Entries: entries})
}

// UnmarshalJSON reads the form MarshalJSON writes, strictly: unknown
// fields, another version, entries numbered other than 1, 2, ..., an entry
// without a node or function, arguments that are not a JSON array, and an
// entry with both or neither of a result and an error are Validation
// errors. On error the journal is unchanged.
func (j *Journal) UnmarshalJSON(data []byte) error {
	entries, err := decodeJournal(data)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries, j.bytes = entries, entriesSize(entries)
	return nil
}

// DecodeJournal reads a journal from its JSON form (see UnmarshalJSON).
func DecodeJournal(data []byte) (*Journal, error) {
	entries, err := decodeJournal(data)
	if err != nil {
		return nil, err
	}
	return &Journal{entries: entries, bytes: entriesSize(entries)}, nil
}

func entriesSize(entries []Entry) int64 {
	var n int64
	for _, e := range entries {
		n += entrySize(e)
	}
	return n
}

func decodeJournal(data []byte) ([]Entry, error) {
	const op = "decode journal"
	var w journalWire
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fault.New(fault.Validation, op, "trailing data after the journal")
	}
	if w.Version != JournalVersion {
		return nil, fault.New(fault.Validation, op, "version %d is not %d", w.Version, JournalVersion)
	}
	for i, e := range w.Entries {
		if err := checkEntry(i, e); err != nil {
			return nil, err
		}
	}
	return slices.Clip(w.Entries), nil
}

func checkEntry(i int, e Entry) error {
	bad := func(format string, args ...any) error {
		return fault.New(fault.Validation, "decode journal", "entries[%d]: "+format, append([]any{i}, args...)...)
	}
	switch {
	case e.Seq != i+1:
		return bad("seq %d, want %d", e.Seq, i+1)
	case e.Node == "":
		return bad("node is required")
	case e.Func == "":
		return bad("func is required")
	case len(e.Args) == 0 || e.Args[0] != '[':
		return bad("args must be a JSON array")
	case (len(e.Result) > 0) == (e.Err != nil):
		return bad("exactly one of result and error is required")
	case e.Err != nil && e.Err.Code == "":
		return bad("error.code is required")
	}
	return nil
}
