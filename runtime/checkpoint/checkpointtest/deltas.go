package checkpointtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Options are the optional parts of RunWith.
type Options struct {
	// Tear, when set, damages the newest entry of execID in s as a crash in
	// the middle of its save would (a torn tail: part of it written, or
	// garbage after the last whole entry), and returns the store a process
	// started after the crash would open on the same data. Without it the
	// case "torn tail" is skipped.
	Tear func(t *testing.T, s agent.CheckpointStore, execID string) agent.CheckpointStore
}

func deltaCases(opts Options) []Case {
	return []Case{
		{"deltas fold", "Saves that carry BoardChanges (vars set and deleted, channels appended, rewritten, created and removed) load, each, as the whole checkpoint saved.", deltasFold},
		{"stale changes", "BoardChanges that do not follow the newest record (another writer saved in between, or the base was never saved) never make a load differ from the checkpoint saved.", staleChanges},
		{"compaction", "Hundreds of small changes on a large board, past any snapshot policy's byte limit, load as the last checkpoint saved.", compaction},
		{"torn tail", "After the newest save is torn (a crash in its middle), Load returns the checkpoint saved before it, and later saves and loads work.", func(t *testing.T, s agent.CheckpointStore) {
			if opts.Tear == nil {
				t.Skip("the store's test gives no Options.Tear")
			}
			tornTail(t, s, opts.Tear)
		}},
	}
}

// Writer saves the checkpoints of one run with BoardChanges, as an engine
// does: it tracks what changed since the last save the store accepted.
type Writer struct {
	Store agent.CheckpointStore
	CP    agent.Checkpoint // the checkpoint to save next; its board is changed through the methods

	id       uint64
	seq      uint64
	base     uint64
	vars     map[string]struct{}
	channels map[string]int
}

// NewWriter returns a writer of cp (whose board it takes) with the non-zero
// writer id id.
func NewWriter(s agent.CheckpointStore, cp agent.Checkpoint, id uint64) *Writer {
	return &Writer{Store: s, CP: cp, id: id}
}

// Set sets a var.
func (w *Writer) Set(name string, v any) { w.CP.Board.Vars[name] = v; w.touch(name) }

// Unset deletes a var.
func (w *Writer) Unset(name string) { delete(w.CP.Board.Vars, name); w.touch(name) }

// Append appends messages to a channel.
func (w *Writer) Append(name string, msgs ...message.Message) {
	if w.channels == nil {
		w.channels = map[string]int{}
	}
	if _, ok := w.channels[name]; !ok {
		w.channels[name] = len(w.CP.Board.Channels[name])
	}
	w.CP.Board.Append(name, msgs...)
}

// Replace rewrites a channel; nil removes it.
func (w *Writer) Replace(name string, msgs []message.Message) {
	if w.channels == nil {
		w.channels = map[string]int{}
	}
	w.channels[name] = 0
	if msgs == nil {
		delete(w.CP.Board.Channels, name)
		return
	}
	w.CP.Board.Channels[name] = msgs
}

func (w *Writer) touch(name string) {
	if w.vars == nil {
		w.vars = map[string]struct{}{}
	}
	w.vars[name] = struct{}{}
}

// Save saves the checkpoint with the changes since the last accepted save.
func (w *Writer) Save(ctx context.Context) error {
	w.seq++
	cp := w.CP
	cp.Changes = &agent.BoardChanges{Writer: w.id, Seq: w.seq, Base: w.base, Vars: w.vars, Channels: w.channels}
	if err := w.Store.Save(ctx, cp); err != nil {
		return err
	}
	w.base, w.vars, w.channels = w.seq, nil, nil
	return nil
}

// wantLoad loads execID and compares it with want, field for field.
func wantLoad(t *testing.T, s agent.CheckpointStore, want agent.Checkpoint, msg string) {
	t.Helper()
	got := mustLoad(t, s, want.ExecID)
	want.Changes = nil
	assert.Nil(t, got.Changes, msg)
	require.Equal(t, want, *got, msg)
}

func deltasFold(t *testing.T, s agent.CheckpointStore) {
	ctx := context.Background()
	w := NewWriter(s, NewCheckpoint("run-deltas", 1), 7)
	require.NoError(t, w.Save(ctx))
	wantLoad(t, s, w.CP.Clone(), "the first save")
	steps := []func(){
		func() { w.Set("count", 2.0) },
		func() { w.Set("added", map[string]any{"a": []any{1.0, "x"}}); w.Unset("text") },
		func() { w.Append("main", message.NewTextMessage(message.RoleAssistant, "more")) },
		func() { w.Append("side", message.NewTextMessage(message.RoleUser, "new channel")) },
		func() { w.Replace("main", []message.Message{message.NewTextMessage(message.RoleUser, "rewritten")}) },
		func() { w.Replace("side", nil); w.Unset("added") },
		func() { w.Replace("empty", []message.Message{}) },
		func() { w.Set("nothing", "something"); w.Unset("never-there") },
		func() {}, // no change at all
	}
	for i, step := range steps {
		step()
		w.CP.Iteration++
		w.CP.Steps = []string{fmt.Sprintf("node-%d", i)}
		w.CP.Timestamp = w.CP.Timestamp.Add(1e9)
		w.CP.Payload = []byte(fmt.Sprintf(`{"step":%d}`, i))
		w.CP.Attributes = map[string]string{"step": fmt.Sprint(i)}
		require.NoError(t, w.Save(ctx), "step %d", i)
		wantLoad(t, s, w.CP.Clone(), fmt.Sprintf("after step %d", i))
	}
}

func staleChanges(t *testing.T, s agent.CheckpointStore) {
	ctx := context.Background()
	a := NewWriter(s, NewCheckpoint("run-stale", 1), 1)
	require.NoError(t, a.Save(ctx))
	other := NewCheckpoint("run-stale", 5)
	other.Board.Vars["from-other"] = true
	other.Board.Vars["text"] = "other"
	require.NoError(t, s.Save(ctx, other), "another writer, without changes")
	a.Set("count", 3.0)
	require.NoError(t, a.Save(ctx))
	wantLoad(t, s, a.CP.Clone(), "changes whose base was overwritten")

	b := NewWriter(s, NewCheckpoint("run-stale", 2), 2)
	b.base, b.seq = 40, 40 // a base the store never saw
	b.Set("text", "b")
	require.NoError(t, b.Save(ctx))
	wantLoad(t, s, b.CP.Clone(), "changes from a base never saved")

	a.Set("text", "a again")
	require.NoError(t, a.Save(ctx))
	wantLoad(t, s, a.CP.Clone(), "changes of a writer whose save was replaced by another's")
}

func compaction(t *testing.T, s agent.CheckpointStore) {
	ctx := context.Background()
	cp := NewCheckpoint("run-compact", 1)
	big := strings.Repeat("b", 1000)
	for i := range 64 {
		cp.Board.Vars[fmt.Sprintf("v%03d", i)] = big
	}
	w := NewWriter(s, cp, 9)
	require.NoError(t, w.Save(ctx))
	for i := range 300 {
		w.Set(fmt.Sprintf("v%03d", i%64), fmt.Sprintf("%d%s", i, big[:900]))
		w.Set("count", float64(i))
		if i%50 == 0 {
			w.Append("main", message.NewTextMessage(message.RoleAssistant, fmt.Sprint(i)))
		}
		w.CP.Iteration = i + 2
		require.NoError(t, w.Save(ctx), "save %d", i)
		if i%97 == 0 {
			wantLoad(t, s, w.CP.Clone(), fmt.Sprintf("after save %d", i))
		}
	}
	wantLoad(t, s, w.CP.Clone(), "after the last save")
}

func tornTail(t *testing.T, s agent.CheckpointStore, tear func(*testing.T, agent.CheckpointStore, string) agent.CheckpointStore) {
	ctx := context.Background()
	w := NewWriter(s, NewCheckpoint("run-torn", 1), 3)
	require.NoError(t, w.Save(ctx))
	w.Set("count", 2.0)
	require.NoError(t, w.Save(ctx))
	before := w.CP.Clone()
	w.Set("count", 3.0)
	w.Append("main", message.NewTextMessage(message.RoleAssistant, "lost"))
	require.NoError(t, w.Save(ctx))
	s = tear(t, s, "run-torn")
	wantLoad(t, s, before, "the save before the torn one")

	// The writer of the torn save died with it; a new one resumes from the load.
	next := NewWriter(s, *mustLoad(t, s, "run-torn"), 4)
	require.NoError(t, next.Save(ctx))
	next.Set("count", 4.0)
	require.NoError(t, next.Save(ctx))
	next.Set("after", "tear")
	require.NoError(t, next.Save(ctx))
	wantLoad(t, s, next.CP.Clone(), "saves after the torn one")
}
