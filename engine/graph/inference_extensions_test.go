package graph_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 5.3.1: extensions reach the provider as
// model.Request.Extensions, in the order of the config, their fields as
// JSON objects.
func TestInferenceExtensionsReachTheProvider(t *testing.T) {
	t.Parallel()
	rec := &recordingProvider{resp: model.Response{Message: message.NewTextMessage(message.RoleAssistant, "ok")}}
	doc := `
name: g
entry: chat
nodes:
  - id: chat
    type: inference
    config:
      extensions:
        - {provider: openai, id: reasoning, fields: {reasoning_effort: low}}
        - {provider: vllm, id: sampling, fields: {top_k: 20, chat_template_kwargs: {enable_thinking: false}}}
`
	e := buildWith(t, parseDoc(t, doc), newFake(), graph.Options{Deps: map[string]any{graph.ModelDep: rec}})
	_, _, err := execute(t, e, boardWith(userMessage("hi")))
	require.NoError(t, err)
	reqs := rec.requests()
	require.Len(t, reqs, 1)
	got := reqs[0].Extensions
	require.Len(t, got, 2)
	assert.Equal(t, "openai", got[0].Provider)
	assert.Equal(t, "reasoning", got[0].ID)
	assert.JSONEq(t, `{"reasoning_effort":"low"}`, string(got[0].Fields))
	assert.Equal(t, "vllm", got[1].Provider)
	assert.JSONEq(t, `{"top_k":20,"chat_template_kwargs":{"enable_thinking":false}}`, string(got[1].Fields))
	assert.True(t, json.Valid(got[1].Fields))
}

// REF 5.3.1: extensions are checked at build.
func TestInferenceExtensionsBuildErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, config, want string }{
		{"no provider", `{extensions: [{id: a, fields: {}}]}`, "extensions[0].provider: required"},
		{"no id", `{extensions: [{provider: openai, fields: {}}]}`, "extensions[0].id: required"},
		{"fields not an object", `{extensions: [{provider: openai, id: a, fields: [1]}]}`, "extensions[0].fields: want a JSON object"},
		{"no fields", `{extensions: [{provider: openai, id: a}]}`, "extensions[0].fields: want a JSON object"},
		{"twice", `{extensions: [{provider: openai, id: a, fields: {}}, {provider: openai, id: a, fields: {}}]}`,
			`extensions[1]: extension "a" of provider "openai" is listed twice`},
		{"unknown key", `{extensions: [{provider: openai, id: a, fields: {}, extra: 1}]}`, `unknown field "extra"`},
		{"not a list", `{extensions: {provider: openai}}`, "decode config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := parseDoc(t, "name: g\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: "+tt.config+"\n")
			_, err := graph.Build(context.Background(), doc, graph.Options{Deps: map[string]any{graph.ModelDep: failingProvider{}}})
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), `node "chat"`)
		})
	}
}
