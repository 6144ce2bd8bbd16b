package local_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 6.2.2: the delegation tool source offers the tools delegate,
// delegation_status and delegation_targets, under the same per-target
// grants as the delegate host function.
func TestTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	e.agents.put("writer", agenttest.New(agenttest.Say("drafted")))
	e.agents.put("critic", agenttest.New(agenttest.Say("meh")))
	tools := local.NewTools(e.dir, nil)
	var names []string
	for _, d := range tools.Definitions() {
		names = append(names, d.Name)
		assert.True(t, json.Valid(d.Parameters), d.Name)
	}
	assert.Equal(t, []string{"delegate", "delegation_status", "delegation_targets"}, names)

	host := delegation.WithService(agent.NoopHost{}, e.svc)
	run := agent.Run{ID: "run-1", AgentID: "lead", Capabilities: []string{"delegate:writer"}}
	res, err := tools.Execute(timeout(t), tool.Batch{Host: host, Run: run, Calls: []message.ToolCall{
		{ID: "c1", Name: "delegate", Arguments: `{"agent":"writer","message":"draft it"}`},
		{ID: "c2", Name: "delegate", Arguments: `{"agent":"critic","message":"judge it"}`},
		{ID: "c3", Name: "delegation_targets"},
		{ID: "c4", Name: "delegate", Arguments: `{"agent":"writer"`},
		{ID: "c5", Name: "nope"},
	}})
	require.NoError(t, err)
	require.Len(t, res, 5)
	var resp delegation.Response
	require.False(t, res[0].IsError, res[0].Content)
	require.NoError(t, json.Unmarshal([]byte(res[0].Content), &resp))
	assert.Equal(t, "drafted", agenttest.ReplyText(resp.Output))
	assert.Equal(t, "c1", res[0].ToolCallID)
	assert.True(t, res[1].IsError)
	assert.Contains(t, res[1].Content, "policy_denied")
	assert.JSONEq(t, `[{"id":"writer","card":{"name":"WRITER"}}]`, res[2].Content)
	assert.True(t, res[3].IsError)
	assert.Contains(t, res[3].Content, "validation")
	assert.True(t, res[4].IsError)

	status, err := tools.Execute(timeout(t), tool.Batch{Host: host, Run: run, Calls: []message.ToolCall{
		{ID: "s1", Name: "delegation_status", Arguments: `{"id":"` + resp.ID + `"}`}}})
	require.NoError(t, err)
	var got delegation.Response
	require.NoError(t, json.Unmarshal([]byte(status[0].Content), &got))
	assert.Equal(t, resp.ID, got.ID)
	assert.Equal(t, delegation.StatusSucceeded, got.Status)

	none, err := local.NewTools(e.dir, nil).Execute(context.Background(), tool.Batch{Host: agent.NoopHost{}, Run: run,
		Calls: []message.ToolCall{{ID: "x", Name: "delegate", Arguments: `{"agent":"writer","message":"m"}`}}})
	require.NoError(t, err)
	assert.True(t, none[0].IsError, "a host without a service and no fallback")
	fallback, err := local.NewTools(e.dir, e.svc).Execute(context.Background(), tool.Batch{Host: agent.NoopHost{}, Run: run,
		Calls: []message.ToolCall{{ID: "x", Name: "delegate", Arguments: `{"agent":"writer","message":"m"}`}}})
	require.NoError(t, err)
	assert.False(t, fallback[0].IsError, fallback[0].Content)
}
