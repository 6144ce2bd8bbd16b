package agent_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullDefinition returns a valid definition with every field set.
func fullDefinition() agent.Definition {
	return agent.Definition{
		Card: agent.AgentCard{Name: "qa", Description: "answers", Version: "1",
			Skills: []agent.Skill{{ID: "answer", Name: "Answer", Tags: []string{"q"}}, {ID: "cite"}}},
		Tools: []string{"search"},
		Engine: agent.EngineRef{Kind: "agent.Engine", Impl: "graph",
			Deps: map[string]string{"model": "llm", "script_runtime.js": "sandbox/js"}, Settings: json.RawMessage(`{"graph":{"entry":"a"}}`)},
		Policy:       agent.Policy{MaxRevise: 2, ArtifactChannels: []string{"notes"}},
		Capabilities: append(agent.CapabilityNames(), "delegate:researcher"),
		Prepare:      []agent.HookRef{{Type: "seed", Deps: map[string]string{"store": "db"}, Settings: json.RawMessage(`{}`)}},
		Observe:      []agent.HookRef{{Type: "log"}},
		Referees:     []agent.HookRef{{Type: "judge"}, {Type: "length", Settings: json.RawMessage(`{"max":10}`)}},
		Commit:       []agent.HookRef{{Type: "save", Deps: map[string]string{"to": "db/table"}}},
	}
}

// REF 3.3.2
// REF 3.3.3
// REF 3.2.2
func TestDefinitionValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(d *agent.Definition)
		want   string // "" when valid; otherwise the exact error text
	}{
		{"full definition", func(*agent.Definition) {}, ""},
		{"only a name", func(d *agent.Definition) { *d = agent.Definition{Card: agent.AgentCard{Name: "x"}} }, ""},
		{"no engine at all", func(d *agent.Definition) { d.Engine = agent.EngineRef{} }, ""},
		{"engine with empty deps map only", func(d *agent.Definition) { d.Engine = agent.EngineRef{Deps: map[string]string{}} }, ""},
		{"engine kind without impl", func(d *agent.Definition) { d.Engine = agent.EngineRef{Kind: "agent.Engine"} }, ""},
		{"max_revise zero", func(d *agent.Definition) { d.Policy.MaxRevise = 0 }, ""},
		{"settings null", func(d *agent.Definition) { d.Engine.Settings = json.RawMessage(`null`) }, ""},
		{"no hooks", func(d *agent.Definition) { d.Prepare, d.Observe, d.Referees, d.Commit = nil, nil, nil, nil }, ""},

		// 3.3: card.name and skill ids are required.
		{"card name empty", func(d *agent.Definition) { d.Card.Name = "" }, "agent: card.name is required"},
		{"card name blank", func(d *agent.Definition) { d.Card.Name = " \t" }, "agent: card.name is required"},
		{"skill id empty", func(d *agent.Definition) { d.Card.Skills[1].ID = "" }, "agent: card.skills[1].id is required"},
		{"skill id blank", func(d *agent.Definition) { d.Card.Skills[0].ID = "  " }, "agent: card.skills[0].id is required"},

		// 3.3.2: engine.kind is required when any engine field is set.
		{"engine impl without kind", func(d *agent.Definition) { d.Engine.Kind = "" }, "agent: engine.kind is required"},
		{"engine blank kind", func(d *agent.Definition) { d.Engine.Kind = "  " }, "agent: engine.kind is required"},
		{"engine deps without kind", func(d *agent.Definition) { d.Engine = agent.EngineRef{Deps: map[string]string{"m": "llm"}} },
			"agent: engine.kind is required"},
		{"engine settings without kind", func(d *agent.Definition) { d.Engine = agent.EngineRef{Settings: json.RawMessage(`{}`)} },
			"agent: engine.kind is required"},

		// 3.2.2: refs.
		{"engine dep empty ref", func(d *agent.Definition) { d.Engine.Deps["model"] = "" }, "agent: engine.deps.model: reference is empty"},
		{"engine dep leading slash", func(d *agent.Definition) { d.Engine.Deps["model"] = "/a" },
			`agent: engine.deps.model: reference "/a" has a leading or trailing '/'`},
		{"engine dep three segments", func(d *agent.Definition) { d.Engine.Deps["model"] = "a/b/c" },
			`agent: engine.deps.model: reference "a/b/c" has more than one '/'`},
		{"engine dep name empty", func(d *agent.Definition) { d.Engine.Deps[""] = "llm" }, "agent: engine.deps: dep name is empty"},
		{"engine deps reported in key order", func(d *agent.Definition) { d.Engine.Deps["b"], d.Engine.Deps["a"] = "/x", "y/" },
			`agent: engine.deps.a: reference "y/" has a leading or trailing '/'`},

		{"engine settings not JSON", func(d *agent.Definition) { d.Engine.Settings = json.RawMessage(`{graph:1}`) },
			"agent: engine.settings is not valid JSON"},
		{"engine settings two values", func(d *agent.Definition) { d.Engine.Settings = json.RawMessage(`{} {}`) },
			"agent: engine.settings is not valid JSON"},
		{"max_revise negative", func(d *agent.Definition) { d.Policy.MaxRevise = -1 }, "agent: policy.max_revise must be >= 0"},

		{"capability unknown", func(d *agent.Definition) { d.Capabilities = []string{"steer", "fly"} },
			`agent: capabilities: unknown capability "fly" (known: ask_user, clock, delegate, emit, interrupt, log, publish, random, steer, usage, or delegate:<agent>)`},
		{"capability empty", func(d *agent.Definition) { d.Capabilities = []string{""} }, `agent: capabilities: unknown capability ""`},
		{"capability wrong case", func(d *agent.Definition) { d.Capabilities = []string{"Steer"} }, `agent: capabilities: unknown capability "Steer"`},
		{"capability delegate without target", func(d *agent.Definition) { d.Capabilities = []string{"delegate:"} },
			`agent: capabilities: "delegate:" names no delegation target`},
		{"capability delegate padded target", func(d *agent.Definition) { d.Capabilities = []string{"delegate: researcher"} },
			`agent: capabilities: "delegate: researcher" names no delegation target`},

		// 3.3.3: hooks need a type, valid deps and JSON settings.
		{"prepare hook type empty", func(d *agent.Definition) { d.Prepare[0].Type = "" }, "agent: prepare[0]: hook: type is required"},
		{"observe hook type blank", func(d *agent.Definition) { d.Observe[0].Type = " " }, "agent: observe[0]: hook: type is required"},
		{"referee hook type empty", func(d *agent.Definition) { d.Referees[1].Type = "" }, "agent: referees[1]: hook: type is required"},
		{"commit hook type empty", func(d *agent.Definition) { d.Commit[0].Type = "" }, "agent: commit[0]: hook: type is required"},
		{"hook dep bad ref", func(d *agent.Definition) { d.Commit[0].Deps["to"] = "db/" },
			`agent: commit[0].deps.to: reference "db/" has a leading or trailing '/'`},
		{"second hook dep bad ref", func(d *agent.Definition) { d.Referees[1].Deps = map[string]string{"x": " a"} },
			`agent: referees[1].deps.x: reference " a" has surrounding whitespace`},
		{"hook dep name empty", func(d *agent.Definition) { d.Prepare[0].Deps[" "] = "db" }, "agent: prepare[0].deps: dep name is empty"},
		{"hook settings not JSON", func(d *agent.Definition) { d.Observe[0].Settings = json.RawMessage(`[1,`) },
			"agent: observe[0].settings is not valid JSON"},
		{"referee settings not JSON", func(d *agent.Definition) { d.Referees[1].Settings = json.RawMessage(`nope`) },
			"agent: referees[1].settings is not valid JSON"},

		{"first problem wins", func(d *agent.Definition) { d.Card.Name, d.Engine.Kind, d.Prepare[0].Type = "", "", "" },
			"agent: card.name is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := fullDefinition()
			tt.change(&d)
			err := d.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "error %q does not start with %q", err, tt.want)
			assert.ErrorIs(t, err, fault.Validation)
		})
	}
}

// REF 3.2.2
func TestValidateRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref  string
		want string // "" when valid
	}{
		{"a", ""},
		{"a/b", ""},
		{"llm-main", ""},
		{"db/users.v2", ""},
		{"", "reference is empty"},
		{"   ", "reference is empty"},
		{"/a", `reference "/a" has a leading or trailing '/'`},
		{"a/", `reference "a/" has a leading or trailing '/'`},
		{"/", `reference "/" has a leading or trailing '/'`},
		{"a/b/c", `reference "a/b/c" has more than one '/'`},
		{"a//b", `reference "a//b" has more than one '/'`},
		{" a", `reference " a" has surrounding whitespace`},
		{"a ", `reference "a " has surrounding whitespace`},
		{"\ta/b", `reference "\ta/b" has surrounding whitespace`},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			t.Parallel()
			err := agent.ValidateRef(tt.ref)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
			assert.ErrorIs(t, err, fault.Validation)
		})
	}
}

// REF 3.2.2
func TestValidateRefs(t *testing.T) {
	t.Parallel()
	require.NoError(t, agent.ValidateRefs("deps", nil))
	require.NoError(t, agent.ValidateRefs("deps", map[string]string{"a": "x", "b": "y/z"}))
	err := agent.ValidateRefs("resources.r.deps", map[string]string{"z": "/bad", "m": "ok", "c": "a/b/c"})
	require.EqualError(t, err, `agent: resources.r.deps.c: reference "a/b/c" has more than one '/'`)
	assert.ErrorIs(t, err, fault.Validation)
	err = agent.ValidateRefs("deps", map[string]string{"": "x"})
	assert.EqualError(t, err, "agent: deps: dep name is empty")
}

// REF 3.3.1
// The agent entry has no top-level deps: engine deps go under engine.deps,
// and a strict decoder rejects a top-level deps key.
func TestDefinitionEngineDepsOnlyUnderEngine(t *testing.T) {
	t.Parallel()
	decode := func(doc string) (agent.Definition, error) {
		var d agent.Definition
		dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
		dec.DisallowUnknownFields()
		err := dec.Decode(&d)
		return d, err
	}
	d, err := decode(`{"card":{"name":"qa"},"engine":{"kind":"agent.Engine","impl":"graph","deps":{"model":"llm"}}}`)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"model": "llm"}, d.Engine.Deps)
	require.NoError(t, d.Validate())

	_, err = decode(`{"card":{"name":"qa"},"deps":{"model":"llm"}}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "deps"`)
}

func TestDefinitionJSONRoundTrip(t *testing.T) {
	t.Parallel()
	d := fullDefinition()
	b, err := json.Marshal(d)
	require.NoError(t, err)
	var back agent.Definition
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&back))
	assert.Equal(t, d, back)

	// A zero policy is left out.
	b, err = json.Marshal(agent.Definition{Card: agent.AgentCard{Name: "x"}})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "policy")
}

func TestEngineRefIsZero(t *testing.T) {
	t.Parallel()
	assert.True(t, agent.EngineRef{}.IsZero())
	assert.True(t, agent.EngineRef{Deps: map[string]string{}, Settings: json.RawMessage{}}.IsZero())
	for _, e := range []agent.EngineRef{
		{Kind: "k"}, {Impl: "i"}, {Deps: map[string]string{"a": "b"}}, {Settings: json.RawMessage(`{}`)},
	} {
		assert.False(t, e.IsZero(), "%+v", e)
	}
}

func TestDefinitionHooks(t *testing.T) {
	t.Parallel()
	d := fullDefinition()
	hooks := d.Hooks()
	assert.Equal(t, map[string][]agent.HookRef{
		agent.SlotPrepare: d.Prepare,
		agent.SlotObserve: d.Observe,
		agent.SlotReferee: d.Referees,
		agent.SlotCommit:  d.Commit,
	}, hooks)
	assert.Equal(t, []string{"prepare", "observe", "referee", "commit"},
		[]string{agent.SlotPrepare, agent.SlotObserve, agent.SlotReferee, agent.SlotCommit})
}
