package checkpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/message"
)

// smallCheckpoint is what a graph run saves after a wave of a short chain:
// a board of one variable.
func smallCheckpoint() agent.Checkpoint {
	board := agent.NewBoard()
	board.Vars["n"] = 3.0
	return agent.Checkpoint{ExecID: "run-0123456789abcdef", Steps: []string{"n3"}, Iteration: 3, Board: board,
		Timestamp: time.Date(2025, 3, 1, 12, 30, 0, 123456789, time.UTC)}
}

// waveCheckpoint is the record a graph run saves at a wave boundary of
// a short chain: one variable, no messages, the graph's attributes and
// spec version (a 190-byte record).
func waveCheckpoint() agent.Checkpoint {
	board := agent.NewBoard()
	board.Vars["x"] = 1.0
	return agent.Checkpoint{ExecID: "run-bench", Steps: []string{"n0"}, Iteration: 1, Board: board,
		Attributes: map[string]string{"graph": "chain"}, SpecVersion: "chain",
		Timestamp: time.Date(2026, 11, 30, 9, 33, 15, 238031925, time.UTC)}
}

// realisticCheckpoint has 30 variables (numbers, strings, nested maps and
// arrays) and two channels of a few messages.
func realisticCheckpoint() agent.Checkpoint {
	cp := smallCheckpoint()
	cp.Steps = []string{"plan", "search", "summarize"}
	cp.Attributes = map[string]string{"runtime.session.kind": "run", "agent": "researcher"}
	cp.OriginalStartedAt = cp.Timestamp.Add(-time.Minute)
	vars := cp.Board.Vars
	for i := range 10 {
		vars[fmt.Sprintf("count_%d", i)] = float64(i * 17)
		vars[fmt.Sprintf("note_%d", i)] = fmt.Sprintf("step %d looked at <%d> sources & kept the best ones", i, i+2)
	}
	for i := range 9 {
		vars[fmt.Sprintf("result_%d", i)] = map[string]any{
			"score": 0.25 * float64(i), "title": "A title with \"quotes\"", "ok": i%2 == 0,
			"tags": []any{"alpha", "beta", float64(i)}, "meta": map[string]any{"source": "web", "rank": float64(i)},
		}
	}
	cp.Board.Append("main",
		message.NewTextMessage(message.RoleUser, "Find three recent papers on graph schedulers."),
		message.Message{Role: message.RoleAssistant, Parts: []message.Part{
			message.TextPart("Searching."), message.ToolCallPart("call-1", "search", `{"q":"graph schedulers","limit":3}`)}},
		message.Message{Role: message.RoleTool, Name: "search",
			Parts: []message.Part{message.ToolResultPart("call-1", "three results: A, B and C", false)}},
		message.NewTextMessage(message.RoleAssistant, "Here are three papers: A, B and C."))
	cp.Board.Append("scratch",
		message.Message{Role: message.RoleUser, Parts: []message.Part{
			message.DataPart(json.RawMessage(`{"items":[1,2,3],"done":false}`), "application/json")}},
		message.NewTextMessage(message.RoleAssistant, "noted"))
	return cp
}

var encodeBoards = []struct {
	name string
	cp   agent.Checkpoint
}{
	{"small", smallCheckpoint()},
	{"wave", waveCheckpoint()},
	{"realistic", realisticCheckpoint()},
}

// BenchmarkEncode compares Encode (fast) with json.Marshal of the same
// checkpoint (marshal), the way records were written before; Encode also
// validates, json.Marshal alone does not.
func BenchmarkEncode(b *testing.B) {
	for _, board := range encodeBoards {
		cp := board.cp
		b.Run(board.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := checkpoint.Encode(cp); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(board.name+"/marshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(cp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMemorySave measures the in-memory store's Save, what a graph run
// pays per wave when it checkpoints to memory.
func BenchmarkMemorySave(b *testing.B) {
	for _, board := range encodeBoards {
		cp := board.cp
		b.Run(board.name, func(b *testing.B) {
			ctx := context.Background()
			m := checkpoint.NewMemory()
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Save(ctx, cp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
