package checkpointtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Case is one rule of the checkpoint store contract.
type Case struct {
	Name string // the subtest's name
	Rule string // the rule, in one sentence
	// Run checks the rule against a fresh, empty store.
	Run func(t *testing.T, s agent.CheckpointStore)
}

// Run runs every case of Cases as a subtest of t, each against a store from
// newStore.
func Run(t *testing.T, newStore func(t *testing.T) agent.CheckpointStore) {
	t.Helper()
	RunWith(t, newStore, Options{})
}

// RunWith is Run with the cases that need Options.
func RunWith(t *testing.T, newStore func(t *testing.T) agent.CheckpointStore, opts Options) {
	t.Helper()
	for _, c := range CasesWith(opts) {
		t.Run(c.Name, func(t *testing.T) {
			t.Log("rule: " + c.Rule)
			c.Run(t, newStore(t))
		})
	}
}

// Cases returns the cases of the suite, in the order Run runs them.
func Cases() []Case { return CasesWith(Options{}) }

// CasesWith returns the cases of the suite with opts, in the order RunWith
// runs them.
func CasesWith(opts Options) []Case {
	return append([]Case{
		{"round trip", "Load returns, field for field, the checkpoint that Save stored.", roundTrip},
		{"save copies", "Changing a checkpoint after Save does not change the stored record.", saveCopies},
		{"load copies", "Changing a loaded checkpoint changes neither the stored record nor later loads.", loadCopies},
		{"last write wins", "A later Save of an exec id replaces the earlier record.", lastWriteWins},
		{"ids are independent", "Records of different exec ids do not affect one another.", idsIndependent},
		{"concurrent saves never tear", "While many goroutines save one exec id and others load it, every load sees one whole, valid record and the final load is one of those saved.", concurrentSaves},
		{"missing is nil", "Load of an exec id that was never saved returns (nil, nil).", missingIsNil},
		{"invalid checkpoint", "Save of a checkpoint that fails Validate is a Validation error and stores nothing.", invalidCheckpoint},
		{"bad exec ids", "An exec id that is blank, contains '/' or '\\', or is '.' or '..' is a Validation error for Save, Load and Delete.", badExecIDs},
		{"lister sorted", "List (CheckpointLister) returns each saved exec id once, sorted, and forgets deleted ones.", listerSorted},
		{"deleter idempotent", "Delete (CheckpointDeleter) removes the record; deleting it again or deleting an id never saved is not an error.", deleterIdempotent},
	}, deltaCases(opts)...)
}

// NewCheckpoint returns a valid checkpoint of execID at iteration whose
// every field is set, with JSON-shaped values only (numbers as float64,
// times in UTC), so that it survives a JSON round trip unchanged.
func NewCheckpoint(execID string, iteration int) agent.Checkpoint {
	board := agent.NewBoard()
	board.Vars["text"] = "hello"
	board.Vars["count"] = float64(iteration)
	board.Vars["flags"] = map[string]any{"done": false, "tags": []any{"a", "b"}}
	board.Vars["nothing"] = nil
	board.Append("main",
		message.Message{Role: message.RoleUser, Parts: []message.Part{
			message.TextPart("hi"), message.DataPart(json.RawMessage(`{"k":1}`), "application/json"),
		}},
		message.Message{Role: message.RoleAssistant, Parts: []message.Part{
			message.TextPart("looking"), message.ToolCallPart("call-1", "lookup", `{"q":"x"}`),
		}},
		message.Message{Role: message.RoleTool, Name: "lookup", Metadata: map[string]string{"source": "test"},
			Parts: []message.Part{message.ToolResultPart("call-1", "found", false)}},
	)
	return agent.Checkpoint{
		ExecID:            execID,
		Steps:             []string{"plan", "act"},
		Iteration:         iteration,
		Board:             board,
		Payload:           json.RawMessage(`{"request":{"text":"hi"}}`),
		Attributes:        map[string]string{"runtime.session.kind": "run"},
		Timestamp:         time.Date(2025, 3, 1, 12, 30, 0, 123456789, time.UTC),
		OriginalStartedAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		SpecVersion:       "v1",
	}
}

// mutate changes every mutable part of cp in place.
func mutate(cp *agent.Checkpoint) {
	cp.Steps[0] = "changed"
	cp.Payload[2] = 'X'
	cp.Attributes["runtime.session.kind"] = "changed"
	cp.Board.Vars["text"] = "changed"
	cp.Board.Vars["flags"].(map[string]any)["done"] = true
	cp.Board.Vars["flags"].(map[string]any)["tags"].([]any)[0] = "changed"
	cp.Board.Channels["main"][0].Parts[0].Text = "changed"
	cp.Board.Channels["main"][0].Parts[1].Data[2] = 'X'
	cp.Board.Channels["main"][1].Parts[1].ToolCall.Name = "changed"
	cp.Board.Channels["main"][2].Metadata["source"] = "changed"
	cp.Board.Append("main", message.NewTextMessage(message.RoleUser, "extra"))
}

func mustLoad(t *testing.T, s agent.CheckpointStore, execID string) *agent.Checkpoint {
	t.Helper()
	got, err := s.Load(context.Background(), execID)
	require.NoError(t, err)
	require.NotNil(t, got, "a saved record must load")
	return got
}

func roundTrip(t *testing.T, s agent.CheckpointStore) {
	want := NewCheckpoint("run-roundtrip", 3)
	require.NoError(t, s.Save(context.Background(), want))
	got := mustLoad(t, s, "run-roundtrip")
	assert.Equal(t, want, *got)
	require.NoError(t, got.Validate())
}

func saveCopies(t *testing.T, s agent.CheckpointStore) {
	cp := NewCheckpoint("run-savecopy", 1)
	require.NoError(t, s.Save(context.Background(), cp))
	mutate(&cp)
	assert.Equal(t, NewCheckpoint("run-savecopy", 1), *mustLoad(t, s, "run-savecopy"))
}

func loadCopies(t *testing.T, s agent.CheckpointStore) {
	require.NoError(t, s.Save(context.Background(), NewCheckpoint("run-loadcopy", 1)))
	first := mustLoad(t, s, "run-loadcopy")
	mutate(first)
	second := mustLoad(t, s, "run-loadcopy")
	assert.Equal(t, NewCheckpoint("run-loadcopy", 1), *second)
	assert.NotSame(t, first.Board, second.Board, "each load returns its own board")
}

func lastWriteWins(t *testing.T, s agent.CheckpointStore) {
	ctx := context.Background()
	require.NoError(t, s.Save(ctx, NewCheckpoint("run-lww", 1)))
	second := NewCheckpoint("run-lww", 2)
	second.Steps = []string{"review"}
	second.Board.Vars["only-in-second"] = "yes"
	delete(second.Board.Vars, "text")
	require.NoError(t, s.Save(ctx, second))
	assert.Equal(t, second, *mustLoad(t, s, "run-lww"))
}

func idsIndependent(t *testing.T, s agent.CheckpointStore) {
	ctx := context.Background()
	require.NoError(t, s.Save(ctx, NewCheckpoint("run-a", 1)))
	require.NoError(t, s.Save(ctx, NewCheckpoint("run-b", 2)))
	require.NoError(t, s.Save(ctx, NewCheckpoint("run-a", 3)))
	assert.Equal(t, NewCheckpoint("run-b", 2), *mustLoad(t, s, "run-b"))
	assert.Equal(t, NewCheckpoint("run-a", 3), *mustLoad(t, s, "run-a"))
}

func missingIsNil(t *testing.T, s agent.CheckpointStore) {
	ctx := context.Background()
	got, err := s.Load(ctx, "run-never")
	require.NoError(t, err)
	assert.Nil(t, got)
	require.NoError(t, s.Save(ctx, NewCheckpoint("run-other", 1)))
	got, err = s.Load(ctx, "run-never")
	require.NoError(t, err)
	assert.Nil(t, got, "another id's record is not a fallback")
}

func invalidCheckpoint(t *testing.T, s agent.CheckpointStore) {
	ctx := context.Background()
	bad := map[string]func(cp *agent.Checkpoint){
		"no exec id":          func(cp *agent.Checkpoint) { cp.ExecID = "" },
		"no board":            func(cp *agent.Checkpoint) { cp.Board = nil },
		"payload not JSON":    func(cp *agent.Checkpoint) { cp.Payload = json.RawMessage(`{"open":`) },
		"negative iteration":  func(cp *agent.Checkpoint) { cp.Iteration = -1 },
		"blank exec id":       func(cp *agent.Checkpoint) { cp.ExecID = "  " },
		"exec id with slash":  func(cp *agent.Checkpoint) { cp.ExecID = "a/b" },
		"exec id parent path": func(cp *agent.Checkpoint) { cp.ExecID = ".." },
	}
	for why, change := range bad {
		cp := NewCheckpoint("run-invalid", 1)
		change(&cp)
		err := s.Save(ctx, cp)
		require.ErrorIs(t, err, fault.Validation, why)
	}
	got, err := s.Load(ctx, "run-invalid")
	require.NoError(t, err)
	assert.Nil(t, got, "a refused save stores nothing")
}

func badExecIDs(t *testing.T, s agent.CheckpointStore) {
	ctx := context.Background()
	for _, id := range []string{"", "   ", "a/b", `a\b`, ".", "..", "/", "../x", `..\x`} {
		cp := NewCheckpoint(id, 1)
		assert.ErrorIs(t, s.Save(ctx, cp), fault.Validation, "save %q", id)
		got, err := s.Load(ctx, id)
		assert.ErrorIs(t, err, fault.Validation, "load %q", id)
		assert.Nil(t, got)
		if d, ok := s.(agent.CheckpointDeleter); ok {
			assert.ErrorIs(t, d.Delete(ctx, id), fault.Validation, "delete %q", id)
		}
	}
}

func listerSorted(t *testing.T, s agent.CheckpointStore) {
	l, ok := s.(agent.CheckpointLister)
	if !ok {
		t.Skipf("%T does not implement agent.CheckpointLister", s)
	}
	ctx := context.Background()
	ids, err := l.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids, "a fresh store lists nothing")
	for _, id := range []string{"run-b", "session-a", "run-a", "a-b", "a", "run-b"} {
		require.NoError(t, s.Save(ctx, NewCheckpoint(id, 1)))
	}
	ids, err = l.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "a-b", "run-a", "run-b", "session-a"}, ids)
	if d, ok := s.(agent.CheckpointDeleter); ok {
		require.NoError(t, d.Delete(ctx, "run-a"))
		ids, err = l.List(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "a-b", "run-b", "session-a"}, ids)
	}
}

func deleterIdempotent(t *testing.T, s agent.CheckpointStore) {
	d, ok := s.(agent.CheckpointDeleter)
	if !ok {
		t.Skipf("%T does not implement agent.CheckpointDeleter", s)
	}
	ctx := context.Background()
	require.NoError(t, s.Save(ctx, NewCheckpoint("run-del", 1)))
	require.NoError(t, s.Save(ctx, NewCheckpoint("run-keep", 1)))
	require.NoError(t, d.Delete(ctx, "run-del"))
	got, err := s.Load(ctx, "run-del")
	require.NoError(t, err)
	assert.Nil(t, got, "a deleted record is gone")
	require.NoError(t, d.Delete(ctx, "run-del"), "deleting twice")
	require.NoError(t, d.Delete(ctx, "run-never"), "deleting an id never saved")
	mustLoad(t, s, "run-keep")
	require.NoError(t, s.Save(ctx, NewCheckpoint("run-del", 2)))
	assert.Equal(t, 2, mustLoad(t, s, "run-del").Iteration, "an id can be saved again after Delete")
}

func concurrentSaves(t *testing.T, s agent.CheckpointStore) {
	const writers, rounds, readers = 8, 6, 4
	ctx := context.Background()
	var mu sync.Mutex
	var failures []error
	record := func(err error) {
		if err != nil {
			mu.Lock()
			failures = append(failures, err)
			mu.Unlock()
		}
	}
	var writing, reading sync.WaitGroup
	for w := range writers {
		writing.Go(func() {
			for r := range rounds {
				iteration := w*rounds + r + 1
				cp := NewCheckpoint("run-hammer", iteration)
				cp.Steps = []string{fmt.Sprint(iteration)}
				cp.Board.Vars["blob"] = hammerBlob(iteration)
				if iteration%2 == 1 {
					cp.Payload = nil
				}
				record(s.Save(ctx, cp))
			}
		})
	}
	stop := make(chan struct{})
	for range readers {
		reading.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := s.Load(ctx, "run-hammer")
				if err == nil && got != nil {
					err = checkHammered(got, writers*rounds)
				}
				if err != nil {
					record(err)
					return
				}
			}
		})
	}
	writing.Wait()
	close(stop)
	reading.Wait()
	require.Empty(t, failures)
	require.NoError(t, checkHammered(mustLoad(t, s, "run-hammer"), writers*rounds))
}

// hammerBlob is a board variable of the concurrent case: records of
// several sizes, from a few hundred bytes to over 16 KiB, so that a store
// that reuses memory sees records shrink and grow.
func hammerBlob(iteration int) string {
	if iteration%3 == 0 {
		return strings.Repeat("x", 16<<10)
	}
	return strings.Repeat(fmt.Sprint(iteration%10), iteration*97)
}

// checkHammered checks that a record of the concurrent case is whole: its
// parts all come from the same save.
func checkHammered(cp *agent.Checkpoint, most int) error {
	if err := cp.Validate(); err != nil {
		return fmt.Errorf("a torn record: %w", err)
	}
	count, _ := cp.Board.Vars["count"].(float64)
	switch {
	case cp.Iteration < 1 || cp.Iteration > most:
		return fmt.Errorf("a record that was never saved: iteration %d", cp.Iteration)
	case count != float64(cp.Iteration) || len(cp.Steps) != 1 || cp.Steps[0] != fmt.Sprint(cp.Iteration):
		return fmt.Errorf("a torn record: iteration %d, count %v, steps %v", cp.Iteration, cp.Board.Vars["count"], cp.Steps)
	case cp.Board.Vars["blob"] != hammerBlob(cp.Iteration) || (len(cp.Payload) == 0) != (cp.Iteration%2 == 1):
		return fmt.Errorf("a torn record: iteration %d has a damaged board", cp.Iteration)
	}
	return nil
}
