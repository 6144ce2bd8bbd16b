package agent_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fullCheckpoint() agent.Checkpoint {
	b := agent.NewBoard()
	b.Vars["n"] = 1.0
	b.Vars["nested"] = map[string]any{"l": []any{"a"}}
	b.Append(agent.MainChannel, message.NewTextMessage(message.RoleUser, "hi"))
	return agent.Checkpoint{
		ExecID:            "run-0123456789abcdef",
		Steps:             []string{"plan", "act"},
		Iteration:         2,
		Board:             b,
		Payload:           json.RawMessage(`{"wave":3}`),
		Attributes:        map[string]string{"node": "act"},
		Timestamp:         time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
		OriginalStartedAt: time.Date(2025, 1, 2, 3, 0, 0, 0, time.UTC),
		SpecVersion:       "v1",
	}
}

// REF 7.1
func TestCheckpointValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(c *agent.Checkpoint)
		want   string // "" when valid
	}{
		{"full", func(*agent.Checkpoint) {}, ""},
		{"only the required fields", func(c *agent.Checkpoint) {
			*c = agent.Checkpoint{ExecID: "x", Board: &agent.Board{}}
		}, ""},
		{"no payload", func(c *agent.Checkpoint) { c.Payload = nil }, ""},
		{"payload null", func(c *agent.Checkpoint) { c.Payload = json.RawMessage(`null`) }, ""},
		{"payload scalar", func(c *agent.Checkpoint) { c.Payload = json.RawMessage(`"s"`) }, ""},
		{"exec id empty", func(c *agent.Checkpoint) { c.ExecID = "" }, "checkpoint: exec_id is required"},
		{"exec id blank", func(c *agent.Checkpoint) { c.ExecID = " \n" }, "checkpoint: exec_id is required"},
		{"board missing", func(c *agent.Checkpoint) { c.Board = nil }, "checkpoint: run-0123456789abcdef: board is required"},
		{"payload not JSON", func(c *agent.Checkpoint) { c.Payload = json.RawMessage(`{wave:3}`) },
			"checkpoint: run-0123456789abcdef: payload is not valid JSON"},
		{"payload truncated", func(c *agent.Checkpoint) { c.Payload = json.RawMessage(`[1,`) },
			"checkpoint: run-0123456789abcdef: payload is not valid JSON"},
		{"payload two values", func(c *agent.Checkpoint) { c.Payload = json.RawMessage(`1 2`) },
			"checkpoint: run-0123456789abcdef: payload is not valid JSON"},
		{"iteration negative", func(c *agent.Checkpoint) { c.Iteration = -1 },
			"checkpoint: run-0123456789abcdef: iteration must be >= 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fullCheckpoint()
			tt.change(&c)
			err := c.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
			assert.ErrorIs(t, err, fault.Validation)
		})
	}
}

// REF 7.1
func TestCheckpointCloneIsDeep(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(c *agent.Checkpoint){
		"exec id":          func(c *agent.Checkpoint) { c.ExecID = "other" },
		"step":             func(c *agent.Checkpoint) { c.Steps[0] = "changed" },
		"steps append":     func(c *agent.Checkpoint) { c.Steps = append(c.Steps[:1], "x") },
		"iteration":        func(c *agent.Checkpoint) { c.Iteration++ },
		"board var":        func(c *agent.Checkpoint) { c.Board.Vars["n"] = 2.0 },
		"board nested var": func(c *agent.Checkpoint) { c.Board.Vars["nested"].(map[string]any)["l"].([]any)[0] = "b" },
		"board channel":    func(c *agent.Checkpoint) { c.Board.Channels[agent.MainChannel][0].Parts[0].Text = "changed" },
		"board append": func(c *agent.Checkpoint) {
			c.Board.Append(agent.MainChannel, message.NewTextMessage(message.RoleUser, "x"))
		},
		"board replaced":  func(c *agent.Checkpoint) { *c.Board = agent.Board{} },
		"payload byte":    func(c *agent.Checkpoint) { c.Payload[2] = 'W' },
		"attribute":       func(c *agent.Checkpoint) { c.Attributes["node"] = "changed" },
		"attribute added": func(c *agent.Checkpoint) { c.Attributes["new"] = "x" },
		"timestamp":       func(c *agent.Checkpoint) { c.Timestamp = c.Timestamp.Add(time.Second) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			orig := fullCheckpoint()
			clone := orig.Clone()
			require.Equal(t, orig, clone)
			mutate(&clone)
			assert.NotEqual(t, fullCheckpoint(), clone)
			assert.Equal(t, fullCheckpoint(), orig)
		})
	}

	zero := agent.Checkpoint{}.Clone()
	assert.Equal(t, agent.Checkpoint{}, zero, "nil fields stay nil")
	empty := agent.Checkpoint{Payload: json.RawMessage{}, Steps: []string{}}.Clone()
	assert.NotNil(t, empty.Payload)
	assert.NotNil(t, empty.Steps)
}

// REF 7.1
func TestCheckpointJSON(t *testing.T) {
	t.Parallel()
	c := fullCheckpoint()
	wire, err := json.Marshal(c)
	require.NoError(t, err)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(wire, &fields))
	for _, k := range []string{"exec_id", "steps", "iteration", "board", "payload", "attributes", "timestamp",
		"original_started_at", "spec_version"} {
		assert.Contains(t, fields, k)
	}
	var back agent.Checkpoint
	require.NoError(t, json.Unmarshal(wire, &back))
	require.NoError(t, back.Validate())
	assert.Equal(t, c, back)

	wire, err = json.Marshal(agent.Checkpoint{ExecID: "x", Board: agent.NewBoard()})
	require.NoError(t, err)
	assert.NotContains(t, string(wire), "original_started_at", "a zero start time is left out")
}
