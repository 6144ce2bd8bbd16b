package graph_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 5.3.1: model takes the spec form {id: {provider, name},
// profile} besides a name and {provider, name}; the profile reaches the
// provider with the request.
func TestInferenceModelForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, model       string
		wantModel, wantPr string
		local             bool
	}{
		{"spec form", `{id: {provider: local, name: llama3.2}, profile: eu}`, "llama3.2", "eu", true},
		{"spec form without profile", `{id: {provider: local, name: llama3.2}}`, "llama3.2", "", true},
		{"spec form default provider", `{id: {name: mini}, profile: eu}`, "mini", "eu", false},
		{"flat form with profile", `{provider: local, name: llama3.2, profile: us}`, "llama3.2", "us", true},
		{"name", `mini`, "mini", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			local := &recordingProvider{resp: model.Response{Message: message.NewTextMessage(message.RoleAssistant, "ok")}}
			def := &recordingProvider{resp: model.Response{Message: message.NewTextMessage(message.RoleAssistant, "ok")}}
			doc := "name: g\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: {model: " + tt.model + "}\n"
			e := buildWith(t, parseDoc(t, doc), newFake(), graph.Options{Deps: map[string]any{
				graph.ModelDep: def, graph.ModelDep + ".local": local}})
			_, _, err := execute(t, e, boardWith(userMessage("hi")))
			require.NoError(t, err)
			asked, idle := def, local
			if tt.local {
				asked, idle = local, def
			}
			reqs := asked.requests()
			require.Len(t, reqs, 1)
			assert.Empty(t, idle.requests())
			assert.Equal(t, tt.wantModel, reqs[0].Model)
			assert.Equal(t, tt.wantPr, reqs[0].Profile)
		})
	}
}

// REF 5.3.1: a provider that can tell refuses an unknown profile when
// the node is built; the model's two forms cannot be mixed.
func TestInferenceModelBuildErrors(t *testing.T) {
	t.Parallel()
	p := scriptedProvider(t, weatherReplies)
	tests := []struct{ name, config, want string }{
		{"profile the provider lacks", `{model: {id: {name: m}, profile: eu}}`,
			`model.profile: provider model: scripted generate: profile "eu": the scripted provider has no profiles`},
		{"id and name", `{model: {id: {name: m}, name: n}}`, "give id or provider and name, not both"},
		{"id unknown key", `{model: {id: {model: m}}}`, `unknown field "model"`},
		{"id not an object", `{model: {id: m}}`, "model: want a model name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := parseDoc(t, "name: g\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: "+tt.config+"\n")
			_, err := graph.Build(context.Background(), doc, graph.Options{Deps: map[string]any{graph.ModelDep: p}})
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "nodes[0]")
		})
	}
}

// The profile is part of the request the journal records: a replay of a
// run that asks another profile diverges.
func TestInferenceProfileIsPartOfTheJournal(t *testing.T) {
	t.Parallel()
	engine := func(profile string, p model.Provider) *graph.Engine {
		doc := "name: g\nentry: chat\nnodes:\n  - id: chat\n    type: inference\n    config: {model: {id: {name: m}, profile: " + profile + "}}\n"
		return buildWith(t, parseDoc(t, doc), newFake(), graph.Options{Deps: map[string]any{graph.ModelDep: p}})
	}
	rec := &recordingProvider{resp: model.Response{Message: message.NewTextMessage(message.RoleAssistant, "ok")}}
	host := &journalHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal()}
	_, err := engine("eu", rec).Execute(context.Background(), testRun(), host, boardWith(userMessage("hi")))
	require.NoError(t, err)
	entries := host.journal.Entries()
	require.Len(t, entries, 1)
	assert.Contains(t, string(entries[0].Args), `"profile":"eu"`)

	replay := func() agent.Host {
		return replayingHost{&journalHost{Host: agenttest.NewHost(), journal: hostabi.NewJournal(), replay: graph.NewJournalReplay(host.journal)}}
	}
	_, err = engine("eu", failingProvider{}).Execute(context.Background(), testRun(), replay(), boardWith(userMessage("hi")))
	require.NoError(t, err)
	_, err = engine("us", failingProvider{}).Execute(context.Background(), testRun(), replay(), boardWith(userMessage("hi")))
	require.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "the run diverged")
}
