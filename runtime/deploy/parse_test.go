package deploy_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const yamlDoc = `# a small document
version: v1
resources:
  bus: {kind: test.Bus, impl: memory}
  store:
    kind: test.Store
    impl: deps
    deps: {bus: bus}
    settings:
      note: "<b> & co"
      items: [a, b]
agents:
  qa:
    card: {name: QA}
    engine:
      kind: agent.Engine
      impl: fake
      settings:
        graph: {nodes: [{id: start}]}
    referees:
      - type: ok
      - type: ok
        settings: {note: second}
runtime:
  event_bus: bus
`

const jsonDoc = `
{
  "version": "v1",
  "resources": {
    "store": {"kind": "test.Store", "impl": "deps", "deps": {"bus": "bus"},
              "settings": {"items": ["a", "b"], "note": "<b> & co"}},
    "bus": {"kind": "test.Bus", "impl": "memory"}
  },
  "agents": {
    "qa": {
      "card": {"name": "QA"},
      "engine": {"kind": "agent.Engine", "impl": "fake", "settings": {"graph": {"nodes": [{"id": "start"}]}}},
      "referees": [{"type": "ok"}, {"type": "ok", "settings": {"note": "second"}}]
    }
  },
  "runtime": {"event_bus": "bus"}
}`

func TestParseYAMLAndJSON(t *testing.T) {
	// REF 3.1.1
	t.Parallel()
	y, err := deploy.ParseWithConfig([]byte(yamlDoc), deploy.ParseConfig{Filename: "d.yaml"})
	require.NoError(t, err)
	j, err := deploy.ParseWithConfig([]byte(jsonDoc), deploy.ParseConfig{Filename: "d.json"})
	require.NoError(t, err)

	for _, doc := range []*deploy.Document{y, j} {
		assert.Equal(t, "v1", doc.Version)
		assert.Equal(t, deploy.ResourceEntry{Kind: "test.Bus", Impl: "memory"}, doc.Resources["bus"])
		assert.JSONEq(t, `{"items":["a","b"],"note":"<b> & co"}`, string(doc.Resources["store"].Settings))
		assert.Equal(t, map[string]string{"bus": "bus"}, doc.Resources["store"].Deps)
		assert.Equal(t, "QA", doc.Agents["qa"].Card.Name)
		assert.Len(t, doc.Agents["qa"].Referees, 2)
		assert.JSONEq(t, `{"event_bus":"bus"}`, string(doc.Runtime))
	}
	assert.Equal(t, y.Hash(), j.Hash(), "the same content in YAML and JSON hashes the same")
	assert.Contains(t, string(y.Resources["store"].Settings), "<b> & co", "settings keep < > & unescaped")
}

func TestParseStrict(t *testing.T) {
	// REF 3.1.1
	t.Parallel()
	cases := []struct {
		name, doc string
		kind      *fault.Kind
		line      int
		path      string
	}{
		{"unknown top-level field", "version: v1\nresource: {}\n", fault.Validation, 2, ""},
		{"unknown resource field", "version: v1\nresources:\n  bus: {kind: k, setting: {}}\n", fault.Validation, 3, "resources.bus"},
		{"unknown card field", "version: v1\nagents:\n  qa:\n    card: {name: Q, title: x}\n", fault.Validation, 4, "agents.qa.card"},
		{"unknown hook field", "version: v1\nagents:\n  qa:\n    card: {name: Q}\n    commit: [{type: t, impl: x}]\n", fault.Validation, 5, "agents.qa.commit[0]"},
		{"second YAML document", "version: v1\n---\nversion: v2\n", fault.Validation, 2, ""},
		{"empty second YAML document", "version: v1\n---\n", fault.Validation, 2, ""},
		{"repeated field", "version: v1\nversion: v2\n", fault.Validation, 2, "version"},
		{"repeated resource", "version: v1\nresources:\n  a: {kind: k}\n  a: {kind: k}\n", fault.Conflict, 4, "resources.a"},
		{"repeated agent", "version: v1\nagents:\n  a: {card: {name: A}}\n  a: {card: {name: A}}\n", fault.Conflict, 4, "agents.a"},
		{"repeated settings key", "version: v1\nresources:\n  a:\n    kind: k\n    settings: {x: 1, x: 2}\n", fault.Validation, 5, "resources.a.settings.x"},
		{"alias", "version: v1\nresources:\n  a: {kind: &k k}\n  b: {kind: *k}\n", fault.Validation, 4, "resources.b.kind"},
		{"merge key", "version: v1\nresources:\n  a:\n    kind: k\n    settings: {<<: {x: 1}}\n", fault.Validation, 5, "resources.a.settings"},
		{"non-string settings key", "version: v1\nresources:\n  a:\n    kind: k\n    settings: {[1]: x}\n", fault.Validation, 5, "resources.a.settings"},
		{"infinity", "version: v1\nresources:\n  a:\n    kind: k\n    settings: {x: -.inf}\n", fault.Validation, 5, "resources.a.settings.x"},
		{"wrong type: sequence for mapping", "version: v1\nresources: [a]\n", fault.Validation, 2, "resources"},
		{"wrong type: mapping for string", "version: {a: 1}\n", fault.Validation, 1, "version"},
		{"wrong type: string for int", "version: v1\nagents:\n  a:\n    card: {name: A}\n    policy: {max_revise: two}\n", fault.Validation, 5, "agents.a.policy.max_revise"},
		{"wrong type: scalar for list", "version: v1\nagents:\n  a:\n    card: {name: A}\n    tools: search\n", fault.Validation, 5, "agents.a.tools"},
		{"not a mapping", "- version\n", fault.Validation, 1, ""},
		{"empty", "\n# only a comment\n", fault.Validation, 1, ""},
		{"syntax (parser)", "version: v1\nresources: {a: [}\n", fault.Validation, 2, ""},
		{"syntax (parser, unclosed)", "version: v1\n\nresources: {a: [1\n", fault.Validation, 3, ""},
		{"syntax (parser, first line)", "]\n", fault.Validation, 1, ""},
		{"syntax (scanner)", "version: v1\nresources:\n\tbus: {}\n", fault.Validation, 3, ""},
		{"syntax (scanner, first line)", "version: a: b\n", fault.Validation, 1, ""},
		{"JSON unknown field", "{\"version\": \"v1\",\n\"extra\": 1}", fault.Validation, 2, ""},
		{"JSON repeated key", "{\"version\": \"v1\",\n\"resources\": {\"a\": {\"kind\": \"k\"},\n\"a\": {\"kind\": \"k\"}}}", fault.Conflict, 3, "resources.a"},
		{"JSON trailing data", "{\"version\": \"v1\"}\n{}", fault.Validation, 2, ""},
		{"JSON syntax", "{\"version\": \"v1\",\n\n \"resources\": {,}}", fault.Validation, 3, ""},
		{"JSON truncated", "{\"version\": \"v1\",\n", fault.Validation, 2, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := deploy.ParseWithConfig([]byte(tc.doc), deploy.ParseConfig{Filename: "doc"})
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.kind)
			var de *deploy.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, "doc", de.Pos.File)
			assert.Equal(t, tc.line, de.Pos.Line, "%v", err)
			assert.Equal(t, tc.path, de.Path, "%v", err)
		})
	}
}

func TestParseAgentDefinition(t *testing.T) {
	// REF 3.3.1
	t.Parallel()
	doc, err := deploy.Parse([]byte(`version: v1
agents:
  qa:
    card:
      name: QA
      description: d
      version: "2"
      skills: [{id: s, name: S, description: sd, tags: [a]}]
    tools: [search]
    engine: {kind: agent.Engine, impl: fake, deps: {bus: bus}, settings: {x: 1}}
    policy: {max_revise: 3, artifact_channels: [report]}
    capabilities: [log, "delegate:writer"]
    prepare: [{type: p}]
    observe: [{type: o}]
    referees: [{type: r, deps: {bus: bus}}]
    commit: [{type: c, settings: {note: n}}]
`))
	require.NoError(t, err)
	def := doc.Agents["qa"]
	assert.Equal(t, "2", def.Card.Version)
	assert.Equal(t, []string{"a"}, def.Card.Skills[0].Tags)
	assert.Equal(t, []string{"search"}, def.Tools)
	assert.Equal(t, "fake", def.Engine.Impl)
	assert.Equal(t, map[string]string{"bus": "bus"}, def.Engine.Deps)
	assert.JSONEq(t, `{"x":1}`, string(def.Engine.Settings))
	assert.Equal(t, 3, def.Policy.MaxRevise)
	assert.Equal(t, []string{"report"}, def.Policy.ArtifactChannels)
	assert.Equal(t, []string{"log", "delegate:writer"}, def.Capabilities)
	assert.Equal(t, "p", def.Prepare[0].Type)
	assert.Equal(t, "o", def.Observe[0].Type)
	assert.Equal(t, map[string]string{"bus": "bus"}, def.Referees[0].Deps)
	assert.JSONEq(t, `{"note":"n"}`, string(def.Commit[0].Settings))

	_, err = deploy.Parse([]byte("version: v1\nagents:\n  qa:\n    card: {name: QA}\n    deps: {bus: bus}\n"))
	require.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `unknown field "deps"`, "engine deps go under engine.deps")
}

func TestDocumentPos(t *testing.T) {
	// REF 3.1.1
	t.Parallel()
	y, err := deploy.ParseWithConfig([]byte(yamlDoc), deploy.ParseConfig{Filename: "d.yaml"})
	require.NoError(t, err)
	j, err := deploy.ParseWithConfig([]byte(jsonDoc), deploy.ParseConfig{Filename: "d.json"})
	require.NoError(t, err)
	cases := []struct {
		doc  *deploy.Document
		path string
		want deploy.Position
	}{
		{y, "version", deploy.Position{File: "d.yaml", Line: 2, Column: 1}},
		{y, "resources.store.deps.bus", deploy.Position{File: "d.yaml", Line: 8, Column: 12}},
		{y, "resources.store.settings.items[1]", deploy.Position{File: "d.yaml", Line: 11, Column: 18}},
		{y, "agents.qa.engine.settings.graph", deploy.Position{File: "d.yaml", Line: 19, Column: 9}},
		{y, "agents.qa.engine.settings.graph.nodes[0].id", deploy.Position{File: "d.yaml", Line: 19, Column: 26}},
		{y, "agents.qa.referees[1].type", deploy.Position{File: "d.yaml", Line: 22, Column: 9}},
		{y, "runtime.event_bus", deploy.Position{File: "d.yaml", Line: 25, Column: 3}},
		{j, "resources.bus", deploy.Position{File: "d.json", Line: 7, Column: 5}},
		{j, "resources.store.settings.items", deploy.Position{File: "d.json", Line: 6, Column: 28}},
		{j, "agents.qa.referees[1].settings.note", deploy.Position{File: "d.json", Line: 13, Column: 64}},
	}
	for _, tc := range cases {
		got, ok := tc.doc.Pos(tc.path)
		assert.True(t, ok, tc.path)
		assert.Equal(t, tc.want, got, tc.path)
	}
	_, ok := y.Pos("agents.qa.card.description")
	assert.False(t, ok, "paths the document does not spell out have no position")
	assert.Equal(t, "d.yaml:19", deploy.Position{File: "d.yaml", Line: 19, Column: 9}.String())
}

func TestParseFile(t *testing.T) {
	// REF 3.1.1
	t.Parallel()
	path := filepath.Join(testdataDir, "full.yaml")
	doc, err := deploy.ParseFile(path)
	require.NoError(t, err)
	assert.Equal(t, path, doc.File())
	assert.Equal(t, testdataDir, doc.BaseDir())
	p, ok := doc.Pos("agents.qa.engine")
	require.True(t, ok)
	assert.Equal(t, path, p.File)

	doc, err = deploy.ParseFileWithConfig(path, deploy.ParseConfig{BaseDir: "elsewhere"})
	require.NoError(t, err)
	assert.Equal(t, "elsewhere", doc.BaseDir())

	_, err = deploy.ParseFile(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorIs(t, err, fault.NotFound)
	var de *deploy.Error
	assert.ErrorAs(t, err, &de)
}

func TestDocumentHash(t *testing.T) {
	t.Parallel()
	a, err := deploy.Parse([]byte("version: v1\nresources:\n  a: {kind: k, settings: {x: 1, y: [1, 2]}}\n  b: {kind: k}\n"))
	require.NoError(t, err)
	b, err := deploy.ParseWithConfig([]byte("# reordered\nresources:\n  b:\n    kind: k\n  a:\n    settings: {y: [1, 2], x: 1}\n    kind: k\nversion: v1\n"),
		deploy.ParseConfig{Filename: "other.yaml"})
	require.NoError(t, err)
	c, err := deploy.Parse([]byte("version: v1\nresources:\n  a: {kind: k, settings: {x: 2, y: [1, 2]}}\n  b: {kind: k}\n"))
	require.NoError(t, err)
	assert.Equal(t, a.Hash(), b.Hash(), "layout, order, comments and file name do not change the hash")
	assert.NotEqual(t, a.Hash(), c.Hash())
	assert.Len(t, a.Hash(), 64)
}

func TestErrorFormat(t *testing.T) {
	t.Parallel()
	cause := fault.New(fault.Forbidden, "", "the path escapes the base directory")
	err := &deploy.Error{Pos: deploy.Position{File: "d.yaml", Line: 3}, Path: "resources.bus.settings", Err: cause}
	assert.EqualError(t, err, "d.yaml:3: resources.bus.settings: the path escapes the base directory")
	assert.ErrorIs(t, err, fault.Forbidden)
	assert.Same(t, cause, errors.Unwrap(err))
	assert.Equal(t, "line 3", deploy.Position{Line: 3}.String())
	assert.Equal(t, "d.yaml", deploy.Position{File: "d.yaml"}.String())
	assert.EqualError(t, &deploy.Error{Path: "version", Err: cause}, "version: the path escapes the base directory")
}

func TestParseNeverReadsOutsideInput(t *testing.T) {
	t.Parallel()
	// A document that is only a settings reference is still a document:
	// the reference is not resolved at parse time.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d.yaml"),
		[]byte("version: v1\nresources:\n  a: {kind: k, settings: {file: missing.yaml}}\n"), 0o644))
	doc, err := deploy.ParseFile(filepath.Join(dir, "d.yaml"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"file":"missing.yaml"}`, string(doc.Resources["a"].Settings))
}
