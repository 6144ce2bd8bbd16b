package hostabi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/corral-rt/corral/fault"
)

// DivergenceError reports that a replayed run asked for an input its
// recording does not hold as the next one of the node: another function,
// other arguments, or an input past the recorded ones. It names the node,
// the call (the node's Call-th recorded input, from 1) and, when the
// recording had one at that point, the recorded entry. It is of kind
// Validation, and a replay fails closed with it: nothing outside the
// recording answers the call.
type DivergenceError struct {
	Node string // the calling node
	Call int    // the node's input number, from 1
	// HostCall is the call's number among every host ABI call of the
	// node's run (emit, log, board reads and the rest included), from 1;
	// 0 when no host ABI call asked for the input (a model reply, a tool
	// result, an interrupt at a wave boundary).
	HostCall int
	Func     string          // the function the run called
	Args     json.RawMessage // the arguments it called it with
	Want     *Entry          // the recorded entry at that point; nil when the recording has none left
}

func (e *DivergenceError) Error() string {
	if e.Want == nil {
		return fmt.Sprintf("replay: node %q call %d: the run calls %s%s, and the recording has no more inputs for the node",
			e.Node, e.Call, e.Func, e.Args)
	}
	return fmt.Sprintf("replay: node %q call %d: the run calls %s%s, the recording has %s%s (entry %d)",
		e.Node, e.Call, e.Func, e.Args, e.Want.Func, e.Want.Args, e.Want.Seq)
}

// Unwrap makes errors.Is(err, fault.Validation) hold.
func (e *DivergenceError) Unwrap() error { return fault.Validation }

// tape is what a replaying journal answers from: the recorded entries of
// each node, in order, and how many of them were taken.
type tape struct {
	queues map[string][]Entry
	taken  map[string]int
	first  *DivergenceError
	after  int // entries with a Seq above it match on the function alone (0: none do)
}

// NewReplayJournal returns a journal that answers the non-deterministic
// calls of a run from entries, a recording, instead of asking the host:
// a Dispatcher whose journal it is answers now, random, askUser,
// drainSteer, checkInterrupt and delegate from it (see Answer), and records
// the answers as a journal does. Entries are answered node by node, in
// their recorded order.
func NewReplayJournal(entries []Entry) *Journal {
	t := &tape{queues: map[string][]Entry{}, taken: map[string]int{}}
	for _, e := range entries {
		t.queues[e.Node] = append(t.queues[e.Node], e.clone())
	}
	return &Journal{tape: t}
}

// NewForkJournal is NewReplayJournal for a fork of a recording: entries
// with a Seq above from answer any call of their function, whatever its
// arguments, since a substituted input changes what later calls ask (a
// model request that holds a changed tool result still gets the recorded
// reply).
func NewForkJournal(entries []Entry, from int) *Journal {
	j := NewReplayJournal(entries)
	j.tape.after = from
	return j
}

// Replaying reports whether j answers calls from a recording
// (NewReplayJournal).
func (j *Journal) Replaying() bool { return j != nil && j.tape != nil }

// Answer returns the next recorded entry of node, which must be a call of
// fn with args (compared as JSON values). A call the recording does not
// hold as the node's next input is a *DivergenceError, which j also keeps
// (Divergence returns the first). skip names functions whose entries are
// passed over on the way to fn's: a tool node's tools call the host ABI
// under the node's name, and a replay that answers the tool's result does
// not run the tool. Answer of a journal that is not replaying is an
// Internal error.
func (j *Journal) Answer(node, fn string, args json.RawMessage, skip ...string) (Entry, error) {
	return j.answer(0, node, fn, args, skip...)
}

// answer is Answer of the hostCall-th host ABI call of the node's run (0:
// not a host ABI call), which a divergence names.
func (j *Journal) answer(hostCall int, node, fn string, args json.RawMessage, skip ...string) (Entry, error) {
	if !j.Replaying() {
		return Entry{}, fault.New(fault.Internal, "replay", "the journal is not replaying")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	t := j.tape
	queue := t.queues[node]
	if len(skip) > 0 {
		for len(queue) > 0 && queue[0].Func != fn && contains(skip, queue[0].Func) {
			queue = queue[1:]
			t.taken[node]++
		}
	}
	t.taken[node]++
	div := &DivergenceError{Node: node, Call: t.taken[node], HostCall: hostCall, Func: fn, Args: compactArgs(args)}
	if len(queue) == 0 {
		t.queues[node] = queue
		return Entry{}, t.diverge(div)
	}
	e := queue[0]
	t.queues[node] = queue[1:]
	if e.Func != fn || (!sameJSON(e.Args, args) && (t.after == 0 || e.Seq <= t.after)) {
		want := e.clone()
		div.Want = &want
		return Entry{}, t.diverge(div)
	}
	return e.clone(), nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// diverge keeps the first divergence and returns d.
func (t *tape) diverge(d *DivergenceError) error {
	if t.first == nil {
		t.first = d
	}
	return d
}

// Divergence returns the first divergence Answer reported, or nil.
func (j *Journal) Divergence() *DivergenceError {
	if !j.Replaying() {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.tape.first
}

// Unanswered returns the recorded entries no call took, node by node in
// the order of their first entry's Seq: inputs the recording holds that
// the replayed run never asked for.
func (j *Journal) Unanswered() []Entry {
	if !j.Replaying() {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Entry
	for _, q := range j.tape.queues {
		for _, e := range q {
			out = append(out, e.clone())
		}
	}
	sortBySeq(out)
	return out
}

func sortBySeq(es []Entry) {
	for i := 1; i < len(es); i++ {
		for k := i; k > 0 && es[k].Seq < es[k-1].Seq; k-- {
			es[k], es[k-1] = es[k-1], es[k]
		}
	}
}

// Taken returns how many recorded inputs of node the replay took.
func (j *Journal) Taken(node string) int {
	if !j.Replaying() {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.tape.taken[node]
}

// sameJSON reports whether a and b encode the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	ca, cb := compactArgs(a), compactArgs(b)
	if bytes.Equal(ca, cb) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(ax, by)
}

// replayCall answers a non-deterministic call of f from the recording.
func (d *Dispatcher) replayCall(f Func, args json.RawMessage, hostCall int) (json.RawMessage, error) {
	e, err := d.cfg.Journal.answer(hostCall, d.cfg.Node, f.Name, args)
	if err != nil {
		return nil, err
	}
	if e.Err != nil {
		return nil, e.Err.Err()
	}
	return e.Result, nil
}

// TakeIf takes the next recorded entry of node when it is a call of fn,
// and reports whether it did; any other next entry (or none) is left in
// place and is no divergence. It answers inputs the run may or may not
// have taken at a point, such as the interrupt the engine saw at a wave
// boundary: a replay takes it where it was recorded and nowhere else.
// TakeIf of a journal that is not replaying takes nothing.
func (j *Journal) TakeIf(node, fn string) (Entry, bool) {
	if !j.Replaying() {
		return Entry{}, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	t := j.tape
	queue := t.queues[node]
	if len(queue) == 0 || queue[0].Func != fn {
		return Entry{}, false
	}
	t.queues[node] = queue[1:]
	t.taken[node]++
	return queue[0].clone(), true
}
