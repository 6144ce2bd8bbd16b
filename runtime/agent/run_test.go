package agent_test

import (
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullBoard returns a board with every value shape Clone copies deeply.
// Each call builds fresh values, so two results share nothing.
func fullBoard() *agent.Board {
	return &agent.Board{
		Vars: map[string]any{
			"s": "x", "f": 1.5, "b": true, "nil": nil, "num": json.Number("3"), "i": 4,
			"map":   map[string]any{"inner": map[string]any{"deep": []any{1.0, map[string]any{"k": "v"}}}},
			"list":  []any{"a", []any{"b"}, map[string]any{"c": 1.0}},
			"raw":   json.RawMessage(`{"a":1}`),
			"bytes": []byte("abc"),
			"strs":  []string{"x", "y"},
			"smap":  map[string]string{"k": "v"},
			"maps":  []map[string]any{{"k": []any{"v"}}},
			"ints":  []int{1, 2},
			"i64s":  []int64{1, 2},
			"fs":    []float64{1, 2},
			"bools": []bool{true},
			"msg":   message.NewTextMessage(message.RoleUser, "in a var"),
			"msgs":  []message.Message{message.NewTextMessage(message.RoleAssistant, "listed")},
		},
		Channels: map[string][]message.Message{
			agent.MainChannel: {
				message.NewTextMessage(message.RoleUser, "hi"),
				{Role: message.RoleAssistant, Parts: []message.Part{message.ToolCallPart("c1", "f", `{}`)},
					Metadata: map[string]string{"k": "v"}},
			},
			"notes": {message.NewTextMessage(message.RoleSystem, "note")},
			"empty": nil,
		},
	}
}

func boardMutations() []struct {
	name   string
	mutate func(b *agent.Board)
} {
	return []struct {
		name   string
		mutate func(b *agent.Board)
	}{
		{"var set", func(b *agent.Board) { b.Vars["s"] = "changed" }},
		{"var delete", func(b *agent.Board) { delete(b.Vars, "f") }},
		{"nested map", func(b *agent.Board) { b.Vars["map"].(map[string]any)["inner"].(map[string]any)["new"] = 1 }},
		{"nested slice in map", func(b *agent.Board) {
			b.Vars["map"].(map[string]any)["inner"].(map[string]any)["deep"].([]any)[0] = "changed"
		}},
		{"map in slice in map", func(b *agent.Board) {
			b.Vars["map"].(map[string]any)["inner"].(map[string]any)["deep"].([]any)[1].(map[string]any)["k"] = "changed"
		}},
		{"slice element", func(b *agent.Board) { b.Vars["list"].([]any)[0] = "changed" }},
		{"slice in slice", func(b *agent.Board) { b.Vars["list"].([]any)[1].([]any)[0] = "changed" }},
		{"map in slice", func(b *agent.Board) { b.Vars["list"].([]any)[2].(map[string]any)["c"] = 2.0 }},
		{"raw message", func(b *agent.Board) { b.Vars["raw"].(json.RawMessage)[2] = 'b' }},
		{"bytes", func(b *agent.Board) { b.Vars["bytes"].([]byte)[0] = 'z' }},
		{"strings", func(b *agent.Board) { b.Vars["strs"].([]string)[0] = "changed" }},
		{"string map", func(b *agent.Board) { b.Vars["smap"].(map[string]string)["k"] = "changed" }},
		{"slice of maps", func(b *agent.Board) { b.Vars["maps"].([]map[string]any)[0]["k"].([]any)[0] = "changed" }},
		{"ints", func(b *agent.Board) { b.Vars["ints"].([]int)[0] = 9 }},
		{"int64s", func(b *agent.Board) { b.Vars["i64s"].([]int64)[0] = 9 }},
		{"float64s", func(b *agent.Board) { b.Vars["fs"].([]float64)[0] = 9 }},
		{"bools", func(b *agent.Board) { b.Vars["bools"].([]bool)[0] = false }},
		{"message var", func(b *agent.Board) { b.Vars["msg"].(message.Message).Parts[0].Text = "changed" }},
		{"message slice var", func(b *agent.Board) { b.Vars["msgs"].([]message.Message)[0].Parts[0].Text = "changed" }},
		{"channel append", func(b *agent.Board) { b.Append(agent.MainChannel, message.NewTextMessage(message.RoleUser, "more")) }},
		{"channel new", func(b *agent.Board) { b.Append("new", message.NewTextMessage(message.RoleUser, "x")) }},
		{"channel delete", func(b *agent.Board) { delete(b.Channels, "notes") }},
		{"channel message text", func(b *agent.Board) { b.Channels[agent.MainChannel][0].Parts[0].Text = "changed" }},
		{"channel message tool call", func(b *agent.Board) { b.Channels[agent.MainChannel][1].Parts[0].ToolCall.Name = "g" }},
		{"channel message metadata", func(b *agent.Board) { b.Channels[agent.MainChannel][1].Metadata["k"] = "changed" }},
		{"channel element", func(b *agent.Board) { b.Channels["notes"][0] = message.Message{} }},
	}
}

func TestBoardCloneIsDeep(t *testing.T) {
	t.Parallel()
	for _, mu := range boardMutations() {
		t.Run(mu.name, func(t *testing.T) {
			t.Parallel()
			orig := fullBoard()
			clone := orig.Clone()
			require.Equal(t, orig, clone)
			mu.mutate(clone)
			assert.NotEqual(t, fullBoard(), clone, "the mutation must change the clone")
			assert.Equal(t, fullBoard(), orig, "the original must not change")

			orig2 := fullBoard()
			clone2 := orig2.Clone()
			mu.mutate(orig2)
			assert.Equal(t, fullBoard(), clone2, "the clone must not follow the original")
		})
	}
}

func TestBoardBasics(t *testing.T) {
	t.Parallel()
	var nilBoard *agent.Board
	assert.Nil(t, nilBoard.Clone())
	assert.Nil(t, nilBoard.Channel(agent.MainChannel))

	b := agent.NewBoard()
	assert.NotNil(t, b.Vars)
	assert.NotNil(t, b.Channels)
	assert.Empty(t, b.Channel(agent.MainChannel))

	zero := &agent.Board{}
	c := zero.Clone()
	assert.NotNil(t, c.Vars, "a clone always has vars")
	assert.NotNil(t, c.Channels, "a clone always has channels")
	zero.Append("ch", message.NewTextMessage(message.RoleUser, "a"), message.NewTextMessage(message.RoleUser, "b"))
	require.Len(t, zero.Channel("ch"), 2)
	assert.Equal(t, "b", zero.Channel("ch")[1].Text())
	assert.Empty(t, c.Channels)

	// A JSON round trip keeps the board.
	wire, err := json.Marshal(&agent.Board{Vars: map[string]any{"a": 1.0, "l": []any{"x"}},
		Channels: map[string][]message.Message{"m": {message.NewTextMessage(message.RoleUser, "hi")}}})
	require.NoError(t, err)
	var back agent.Board
	require.NoError(t, json.Unmarshal(wire, &back))
	assert.Equal(t, map[string]any{"a": 1.0, "l": []any{"x"}}, back.Vars)
	assert.Equal(t, "hi", back.Channel("m")[0].Text())
}

func fullRequest() agent.Request {
	return agent.Request{
		RunID: "run-1", ContextID: "c1",
		Message: message.Message{Role: message.RoleUser, Metadata: map[string]string{"k": "v"},
			Parts: []message.Part{message.TextPart("hi"), message.DataPart(json.RawMessage(`[1]`), "")}},
		Inputs:   map[string]any{"n": 1.0, "nested": map[string]any{"l": []any{"a"}}},
		Metadata: map[string]string{"m": "v"},
	}
}

func TestRequestCloneIsDeep(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(r *agent.Request){
		"run id":           func(r *agent.Request) { r.RunID = "x" },
		"message text":     func(r *agent.Request) { r.Message.Parts[0].Text = "changed" },
		"message data":     func(r *agent.Request) { r.Message.Parts[1].Data[1] = '2' },
		"message metadata": func(r *agent.Request) { r.Message.Metadata["k"] = "changed" },
		"input":            func(r *agent.Request) { r.Inputs["n"] = 2.0 },
		"nested input":     func(r *agent.Request) { r.Inputs["nested"].(map[string]any)["l"].([]any)[0] = "b" },
		"metadata":         func(r *agent.Request) { r.Metadata["m"] = "changed" },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			orig := fullRequest()
			clone := orig.Clone()
			require.Equal(t, orig, clone)
			mutate(&clone)
			assert.NotEqual(t, fullRequest(), clone)
			assert.Equal(t, fullRequest(), orig)
		})
	}
	assert.Equal(t, agent.Request{}, agent.Request{}.Clone())
}

// closeRec is an io.Closer that records its name in a shared log.
type closeRec struct {
	name string
	log  *[]string
	err  error
}

func (c *closeRec) Close() error {
	*c.log = append(*c.log, c.name)
	return c.err
}

func TestAgentClose(t *testing.T) {
	t.Parallel()
	var log []string
	errHook, errEngine := errors.New("hook failed"), errors.New("engine failed")
	a := &agent.Agent{ID: "qa", Closers: []io.Closer{
		&closeRec{name: "engine", log: &log, err: errEngine},
		nil,
		&closeRec{name: "prepare", log: &log},
		(*closeRec)(nil),
		&closeRec{name: "referee", log: &log, err: errHook},
		&closeRec{name: "commit", log: &log},
	}}
	err := a.Close()
	assert.Equal(t, []string{"commit", "referee", "prepare", "engine"}, log, "reverse order, nils skipped, all called")
	require.Error(t, err)
	assert.ErrorIs(t, err, errHook)
	assert.ErrorIs(t, err, errEngine)
	assert.Equal(t, "hook failed\nengine failed", err.Error(), "errors joined in close order")

	assert.NoError(t, (&agent.Agent{}).Close())
	log = nil
	assert.NoError(t, (&agent.Agent{Closers: []io.Closer{&closeRec{name: "a", log: &log}}}).Close())
	assert.Equal(t, []string{"a"}, log)
}
