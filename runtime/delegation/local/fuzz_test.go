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
)

// FuzzToolArgs checks the argument decoding of the delegation tools: any
// name and arguments give exactly one result per call, carrying the call's
// id, never a batch error; a successful delegate result is a valid
// Response of the granted target.
func FuzzToolArgs(f *testing.F) {
	f.Add("delegate", `{"agent":"writer","message":"hi"}`)
	f.Add("delegate", `{"agent":"writer","message":"hi","mode":"async","idempotency_key":"k"}`)
	f.Add("delegate", `{"agent":"critic","message":"hi"}`)
	f.Add("delegate", `{"agent":" writer","message":"hi","mode":"later"}`)
	f.Add("delegation_status", `{"id":"dlg-0000000000000000"}`)
	f.Add("delegation_targets", ``)
	f.Add("delegation_targets", `{"x":1}`)
	f.Add("delegate", `[1,2]`)
	e := newEnv(f, envConfig{legacy: true, settings: local.ServiceSettings{MaxConcurrency: 64}})
	e.agents.put("writer", agenttest.New(agenttest.Say("ok")))
	tools := local.NewTools(e.dir, nil)
	host := delegation.WithService(agent.NoopHost{}, e.svc)
	run := agent.Run{ID: "run-1", AgentID: "lead", Capabilities: []string{"delegate:writer"}}
	f.Fuzz(func(t *testing.T, name, args string) {
		res, err := tools.Execute(context.Background(), tool.Batch{Host: host, Run: run,
			Calls: []message.ToolCall{{ID: "c1", Name: name, Arguments: args}}})
		if err != nil {
			t.Fatalf("%s(%q): a batch error: %v", name, args, err)
		}
		if len(res) != 1 || res[0].ToolCallID != "c1" {
			t.Fatalf("%s(%q): results %+v", name, args, res)
		}
		if res[0].IsError || name != local.ToolDelegate {
			return
		}
		var resp delegation.Response
		if err := json.Unmarshal([]byte(res[0].Content), &resp); err != nil {
			t.Fatalf("%s(%q): result %q: %v", name, args, res[0].Content, err)
		}
		if verr := resp.Validate(); verr != nil || resp.Target != "writer" {
			t.Fatalf("%s(%q): response %+v: %v", name, args, resp, verr)
		}
	})
}
