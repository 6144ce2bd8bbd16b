package deploy_test

import (
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validDoc returns a small valid document built in Go.
func validDoc() *deploy.Document {
	return &deploy.Document{
		Version: "v1",
		Resources: map[string]deploy.ResourceEntry{
			"bus": {Kind: "test.Bus", Impl: "memory"},
		},
		Agents: map[string]agent.Definition{
			"qa": {Card: agent.AgentCard{Name: "QA"}, Engine: agent.EngineRef{Kind: "agent.Engine", Impl: "fake"}},
		},
	}
}

func TestValidate(t *testing.T) {
	// REF 3.1.2
	t.Parallel()
	cases := []struct {
		name   string
		change func(d *deploy.Document)
		path   string
		msg    string
	}{
		{"version is required", func(d *deploy.Document) { d.Version = " " }, "", "version is required"},
		{"resource name is empty", func(d *deploy.Document) { d.Resources[" "] = deploy.ResourceEntry{Kind: "k"} }, "resources", "resource name is empty"},
		{"resource name with slash", func(d *deploy.Document) { d.Resources["a/b"] = deploy.ResourceEntry{Kind: "k"} }, "resources.a/b", "must not contain '/'"},
		{"resource kind is required", func(d *deploy.Document) { d.Resources["x"] = deploy.ResourceEntry{Impl: "i"} }, "resources.x", "kind is required"},
		{"resource dep name is empty", func(d *deploy.Document) {
			d.Resources["x"] = deploy.ResourceEntry{Kind: "k", Deps: map[string]string{"": "bus"}}
		}, "resources.x.deps", "dep name is empty"},
		{"resource settings are not JSON", func(d *deploy.Document) {
			d.Resources["x"] = deploy.ResourceEntry{Kind: "k", Settings: json.RawMessage(`{"a":`)}
		}, "resources.x.settings", "settings are not valid JSON"},
		{"embed reference without a name", func(d *deploy.Document) {
			d.Resources["x"] = deploy.ResourceEntry{Kind: "k", Settings: json.RawMessage(`{"embed": 3}`)}
		}, "resources.x.settings", "{embed: …} reference needs a non-empty string"},
		{"agent name is empty", func(d *deploy.Document) { d.Agents[""] = agent.Definition{Card: agent.AgentCard{Name: "A"}} }, "agents", "agent name is empty"},
		{"card.name is required", func(d *deploy.Document) { d.Agents["a"] = agent.Definition{} }, "agents.a", "card.name is required"},
		{"skill id is required", func(d *deploy.Document) {
			d.Agents["a"] = agent.Definition{Card: agent.AgentCard{Name: "A", Skills: []agent.Skill{{ID: "s"}, {Name: "n"}}}}
		}, "agents.a.card.skills[1]", "id is required"},
		{"tool name is empty", func(d *deploy.Document) {
			d.Agents["a"] = agent.Definition{Card: agent.AgentCard{Name: "A"}, Tools: []string{""}}
		}, "agents.a.tools[0]", "tool name is empty"},
		{"max_revise below zero", func(d *deploy.Document) {
			d.Agents["a"] = agent.Definition{Card: agent.AgentCard{Name: "A"}, Policy: agent.Policy{MaxRevise: -1}}
		}, "agents.a.policy", "max_revise must be >= 0"},
		{"unknown capability", func(d *deploy.Document) {
			d.Agents["a"] = agent.Definition{Card: agent.AgentCard{Name: "A"}, Capabilities: []string{"log", "fs"}}
		}, "agents.a.capabilities[1]", `unknown capability "fs"`},
		{"delegate capability without target", func(d *deploy.Document) {
			d.Agents["a"] = agent.Definition{Card: agent.AgentCard{Name: "A"}, Capabilities: []string{"delegate:"}}
		}, "agents.a.capabilities[0]", "names no delegation target"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := validDoc()
			require.NoError(t, d.Validate())
			tc.change(d)
			err := d.Validate()
			require.ErrorIs(t, err, fault.Validation)
			var de *deploy.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.path, de.Path)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestValidateAgentEngineAndHooks(t *testing.T) {
	// REF 3.3.2
	// REF 3.3.3
	t.Parallel()
	card := agent.AgentCard{Name: "A"}
	cases := []struct {
		name string
		def  agent.Definition
		path string
		msg  string
	}{
		{"no engine is valid", agent.Definition{Card: card}, "", ""},
		{"engine impl without kind", agent.Definition{Card: card, Engine: agent.EngineRef{Impl: "graph"}}, "agents.a.engine", "kind is required"},
		{"engine deps without kind", agent.Definition{Card: card, Engine: agent.EngineRef{Deps: map[string]string{"bus": "bus"}}}, "agents.a.engine", "kind is required"},
		{"engine settings without kind", agent.Definition{Card: card, Engine: agent.EngineRef{Settings: json.RawMessage(`{}`)}}, "agents.a.engine", "kind is required"},
		{"engine bad ref", agent.Definition{Card: card, Engine: agent.EngineRef{Kind: "k", Deps: map[string]string{"bus": "/bus"}}},
			"agents.a.engine.deps.bus", "leading or trailing '/'"},
		{"engine bad settings", agent.Definition{Card: card, Engine: agent.EngineRef{Kind: "k", Settings: json.RawMessage(`{`)}},
			"agents.a.engine.settings", "not valid JSON"},
		{"hook type is required", agent.Definition{Card: card, Prepare: []agent.HookRef{{Type: " "}}}, "agents.a.prepare[0]", "type is required"},
		{"observe hook type", agent.Definition{Card: card, Observe: []agent.HookRef{{Type: "o"}, {}}}, "agents.a.observe[1]", "type is required"},
		{"referee hook bad ref", agent.Definition{Card: card, Referees: []agent.HookRef{{Type: "r", Deps: map[string]string{"x": "a/b/c"}}}},
			"agents.a.referees[0].deps.x", "more than one '/'"},
		{"commit hook bad settings", agent.Definition{Card: card, Commit: []agent.HookRef{{Type: "c", Settings: json.RawMessage(`[`)}}},
			"agents.a.commit[0].settings", "not valid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := validDoc()
			d.Agents["a"] = tc.def
			err := d.Validate()
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, fault.Validation)
			var de *deploy.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.path, de.Path)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestValidateRefs(t *testing.T) {
	// REF 3.2.2
	t.Parallel()
	cases := []struct {
		ref string
		ok  bool
	}{
		{"bus", true},
		{"tools/search", true},
		{"tools/search/more", false},
		{"/tools", false},
		{"tools/", false},
		{"/", false},
		{"", false},
		{" bus", false},
	}
	for _, tc := range cases {
		d := validDoc()
		d.Resources["x"] = deploy.ResourceEntry{Kind: "k", Deps: map[string]string{"dep": tc.ref}}
		err := d.Validate()
		if tc.ok {
			assert.NoError(t, err, tc.ref)
			continue
		}
		assert.ErrorIs(t, err, fault.Validation, tc.ref)
		var de *deploy.Error
		if assert.ErrorAs(t, err, &de, tc.ref) {
			assert.Equal(t, "resources.x.deps.dep", de.Path)
		}
	}
}

func TestValidatePositions(t *testing.T) {
	// REF 3.1.2
	t.Parallel()
	_, err := deploy.ParseWithConfig([]byte("version: v1\nagents:\n  qa:\n    card:\n      name: QA\n      skills:\n        - id: a\n        - name: b\n"),
		deploy.ParseConfig{Filename: "d.yaml"})
	require.Error(t, err)
	assert.EqualError(t, err, "d.yaml:8: agents.qa.card.skills[1]: id is required")

	_, err = deploy.ParseWithConfig([]byte("version: v1\nresources:\n  a:\n    impl: x\n"), deploy.ParseConfig{Filename: "d.yaml"})
	assert.EqualError(t, err, "d.yaml:3: resources.a: kind is required")

	_, err = deploy.ParseWithConfig([]byte("version: ''\n"), deploy.ParseConfig{Filename: "d.yaml"})
	assert.EqualError(t, err, "d.yaml:1: version is required")
}
