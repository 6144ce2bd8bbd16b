package graph_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 5.3.1: intent reaches the provider with the request; absent,
// it is text only.
func TestInferenceIntentReachesTheProvider(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config string
		want         model.Intent
	}{
		{"default", `{}`, model.TextOnly},
		{"text", `{intent: {text: true}}`, model.TextOnly},
		{"text and image", `{intent: {text: true, image: true}}`, model.Intent{Text: true, Image: true}},
		{"audio only", `{intent: {audio: true}}`, model.Intent{Audio: true}},
		{"video", `{intent: {video: true, text: true}}`, model.Intent{Text: true, Video: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recordingProvider{resp: model.Response{Message: message.NewTextMessage(message.RoleAssistant, "ok")}}
			doc := "name: g\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: " + tt.config + "\n"
			e := buildWith(t, parseDoc(t, doc), newFake(), graph.Options{Deps: map[string]any{graph.ModelDep: rec}})
			_, _, err := execute(t, e, boardWith(userMessage("hi")))
			require.NoError(t, err)
			reqs := rec.requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, tt.want, reqs[0].Intent)
		})
	}
}

// REF 5.3.1: a provider that produces text only refuses any other
// modality when the node is built, naming the node and the modality.
func TestInferenceIntentRefusedAtBuild(t *testing.T) {
	t.Parallel()
	p := scriptedProvider(t, weatherReplies)
	tests := []struct{ name, config, want string }{
		{"image", `{intent: {text: true, image: true}}`, "intent image: the provider produces text only"},
		{"audio", `{intent: {audio: true}}`, "intent audio"},
		{"video", `{intent: {video: true}}`, "intent video"},
		{"nothing", `{intent: {text: false}}`, "intent: asks for no modality"},
		{"unknown modality", `{intent: {smell: true}}`, `unknown field "smell"`},
		{"not booleans", `{intent: {text: yes please}}`, "decode config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := parseDoc(t, "name: g\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: "+tt.config+"\n")
			_, err := graph.Build(context.Background(), doc, graph.Options{Deps: map[string]any{graph.ModelDep: p}})
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), `node "chat"`)
		})
	}
}
