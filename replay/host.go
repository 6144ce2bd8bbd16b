package replay

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// tap is the part of a turn's host that a recording and a replay share:
// it hands the graph engine the run's journal and keeps what the run
// publishes and writes to its board, in order.
type tap struct {
	agent.Host
	runID   string
	journal *hostabi.Journal

	mu      sync.Mutex
	events  []Event
	boards  []BoardWrite
	prev    *agent.Board
	pending []string // nodes completed since the last board write
	check   func(i int, ev Event) error
	// maxBytes bounds the bytes of the events and board writes kept (0:
	// no bound); past it nothing more is kept and truncated is set.
	maxBytes  int64
	kept      int64
	truncated bool
}

// keep reports whether n more bytes of transcript may be kept, counting
// them when they may and marking the transcript truncated when not.
// t.mu is held.
func (t *tap) keep(n int) bool {
	if t.maxBytes <= 0 {
		return true
	}
	if t.truncated || t.kept+int64(n) > t.maxBytes {
		t.truncated = true
		return false
	}
	t.kept += int64(n)
	return true
}

// size is what the tap holds: the bytes of the events and board writes
// kept, as keep counts them, and of the journal's inputs.
func (t *tap) size() int64 {
	t.mu.Lock()
	n := t.kept
	t.mu.Unlock()
	return n + t.journal.Bytes()
}

var (
	_ graph.JournalProvider = (*tap)(nil)
	_ agent.HostUnwrapper   = (*tap)(nil)
)

func (t *tap) Journal() *hostabi.Journal { return t.journal }
func (t *tap) UnwrapHost() agent.Host    { return t.Host }

// Publish keeps the event's subject, payload and node, then passes it on.
// A replaying tap compares it with the recorded event at its place first:
// a script whose emit diverges sees the divergence as the call's error.
func (t *tap) Publish(ctx context.Context, env event.Envelope) error {
	ev := Event{Kind: KindEvent, Node: nodeOf(env), Subject: env.Subject, Payload: compact(env.Payload)}
	t.mu.Lock()
	i := len(t.events)
	if t.keep(eventOverhead + len(ev.Node) + len(ev.Subject) + len(ev.Payload)) {
		t.events = append(t.events, ev)
	}
	if strings.HasSuffix(env.Subject, ".complete") && ev.Node != "" {
		t.pending = append(t.pending, ev.Node)
	}
	check := t.check
	t.mu.Unlock()
	if check != nil {
		if err := check(i, ev); err != nil {
			return err
		}
	}
	return t.Host.Publish(ctx, env)
}

// Checkpoint keeps what the wave wrote to the board, then passes the
// checkpoint on.
func (t *tap) Checkpoint(ctx context.Context, cp agent.Checkpoint) error {
	t.ObserveCheckpoint(ctx, cp)
	return t.Host.Checkpoint(ctx, cp)
}

// ObserveCheckpoint keeps what the wave wrote to the board: an ephemeral
// session, which stores no checkpoint, still shows each to the recorder
// (agent.CheckpointObserver), so its turns record their board writes too.
func (t *tap) ObserveCheckpoint(_ context.Context, cp agent.Checkpoint) {
	t.mu.Lock()
	w := diffBoards(t.prev, cp.Board)
	w.Kind, w.Node, w.Iteration = KindBoard, strings.Join(t.pending, ","), cp.Iteration
	t.pending = nil
	t.prev = cp.Board.Clone()
	if len(w.Set) > 0 || len(w.Deleted) > 0 || len(w.Appended) > 0 {
		if t.maxBytes <= 0 {
			t.boards = append(t.boards, w)
		} else if b, err := json.Marshal(w); err == nil && t.keep(len(b)) {
			t.boards = append(t.boards, w)
		} else {
			t.truncated = true
		}
	}
	t.mu.Unlock()
}

// eventOverhead is what keep counts for an event besides its node,
// subject and payload: the line's field names, punctuation and newline.
const eventOverhead = 52

// transcript returns copies of the events and board writes so far.
func (t *tap) transcript() ([]Event, []BoardWrite) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.events), slices.Clone(t.boards)
}

// isTruncated reports whether the tap stopped keeping the transcript.
func (t *tap) isTruncated() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.truncated
}

// replayHost is a tap that replays: the engine's inference nodes take
// their replies from the recording too.
type replayHost struct {
	*tap
}

var _ graph.InferenceReplayer = replayHost{}

func (h replayHost) ReplayInference(node string, args json.RawMessage) (graph.InferenceRecord, error) {
	return graph.TapeReplay{J: h.journal}.ReplayInference(node, args)
}

// nodeOf is the node an event is about: the node_id of a step event's
// payload, the actor of a stream delta's subject.
func nodeOf(env event.Envelope) string {
	if n := env.Headers[event.HeaderNodeID]; n != "" {
		return n
	}
	var p struct {
		NodeID string `json:"node_id"`
	}
	if json.Unmarshal(env.Payload, &p) == nil && p.NodeID != "" {
		return p.NodeID
	}
	parts := strings.Split(env.Subject, ".")
	for i, s := range parts {
		if (s == "step" || s == "stream") && i+1 < len(parts) {
			actor := parts[i+1]
			if j := strings.LastIndex(actor, "_node_"); j >= 0 {
				return actor[j+len("_node_"):]
			}
			return actor
		}
	}
	return ""
}

func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var b strings.Builder
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return append(json.RawMessage(nil), raw...)
	}
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return json.RawMessage(strings.TrimSuffix(b.String(), "\n"))
}

// diffBoards returns what turned prev into next: vars set or deleted,
// messages appended (a channel that shrank or changed is written whole).
func diffBoards(prev, next *agent.Board) BoardWrite {
	var w BoardWrite
	if next == nil {
		return w
	}
	if prev == nil {
		prev = agent.NewBoard()
	}
	for k, v := range next.Vars {
		old, had := prev.Vars[k]
		if had && reflect.DeepEqual(old, v) {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			b, _ = json.Marshal(err.Error())
		}
		if w.Set == nil {
			w.Set = map[string]json.RawMessage{}
		}
		w.Set[k] = b
	}
	for k := range prev.Vars {
		if _, ok := next.Vars[k]; !ok {
			w.Deleted = append(w.Deleted, k)
		}
	}
	slices.Sort(w.Deleted)
	for ch, msgs := range next.Channels {
		old := prev.Channels[ch]
		if len(msgs) == len(old) {
			continue
		}
		add := msgs
		if len(msgs) > len(old) && reflect.DeepEqual(old, msgs[:len(old)]) {
			add = msgs[len(old):]
		}
		if w.Appended == nil {
			w.Appended = map[string][]message.Message{}
		}
		w.Appended[ch] = message.CloneAll(add)
	}
	return w
}
