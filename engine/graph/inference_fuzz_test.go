package graph_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
)

// FuzzInferenceConfig builds an inference node from any config and, when
// it builds, runs it once: Build fails only with Validation errors, and a
// run never panics and fails only with an error that has a kind.
func FuzzInferenceConfig(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"model":"m"}`, `{"model":{"provider":"alt","name":"m"}}`, `{"model":[1]}`,
		`{"stream":true,"output_key":"r","usage_key":"u","tool_pending_key":"p"}`,
		`{"tools":["get_weather"],"tool_choice":"get_weather"}`, `{"all_tools":true,"tool_choice":"required"}`,
		`{"system_prompt":"hi ${board.x:y}"}`, `{"messages_channel":"other"}`, `{"tools":"all"}`, `[]`,
		`{"tools":["get_time"],"undefined_tool_recovery":{"enabled":true,"max_per_run":1},"recover_pending_key":"r"}`,
		`{"undefined_tool_recovery":{"enabled":true},"recover_count_key":"n"}`,
		`{"model":{"id":{"provider":"alt","name":"m"},"profile":"eu"}}`, `{"model":{"id":{},"name":"x"}}`,
		`{"intent":{"text":true,"image":true}}`, `{"intent":{}}`,
		`{"extensions":[{"provider":"openai","id":"r","fields":{"seed":1}},{"provider":"x","id":"r","fields":{}}]}`,
	} {
		f.Add([]byte(s))
	}
	p := scriptedProvider(f, weatherReplies)
	tools := newFakeTools("get_weather", "get_time")
	f.Fuzz(func(t *testing.T, config []byte) {
		doc := &graph.Document{Name: "g", Entry: "chat", Nodes: []graph.Node{{ID: "chat", Type: "inference", Config: config}}}
		if doc.Validate() != nil {
			return
		}
		e, err := graph.Build(context.Background(), doc, graph.Options{
			Deps: map[string]any{graph.ModelDep: p, graph.ModelDep + ".alt": p, graph.ToolsDep: tools}})
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("build: %v", err)
			}
			return
		}
		_, err = e.Execute(context.Background(), testRun(), agenttest.NewHost(), boardWith(userMessage("weather?")))
		if err != nil && fault.KindOf(err) == nil {
			t.Fatalf("execute: an error without a kind: %v", err)
		}
	})
}
