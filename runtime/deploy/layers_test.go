package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const baseLayer = `version: v1
resources:
  bus: {kind: test.Bus, impl: memory}
  store:
    kind: test.Store
    impl: deps
    deps: {bus: bus}
    settings:
      note: base
      items: [a, b]
agents:
  qa:
    card: {name: QA}
    engine: {kind: agent.Engine, impl: fake, settings: {note: base}}
    capabilities: [log, emit]
runtime:
  event_bus: bus
  sessions: {idle_timeout: 10m, sink_buffer: 256}
`

func TestLoadLayersMerge(t *testing.T) {
	// REF 3.4.6
	t.Parallel()
	overlay := `resources:
  store:
    settings:
      items: [c]
  extra: {kind: test.Thing}
agents:
  qa:
    engine: {settings: {note: prod}}
    capabilities: [log]
  writer:
    card: {name: Writer}
runtime:
  sessions: {sink_buffer: 512}
`
	top := `{"agents": {"qa": {"card": {"description": "from json"}}}, "version": "v2"}`
	// Given out of order: priority decides.
	doc, prov, err := deploy.LoadLayers([]deploy.Layer{
		{Name: "top", Priority: 20, Data: []byte(top), File: "top.json"},
		{Name: "base", Priority: 0, Data: []byte(baseLayer), File: "base.yaml"},
		{Name: "prod", Priority: 10, Data: []byte(overlay), File: "prod.yaml"},
	}, deploy.ParseConfig{})
	require.NoError(t, err)
	assert.Equal(t, "v2", doc.Version)
	assert.JSONEq(t, `{"note":"base","items":["c"]}`, string(doc.Resources["store"].Settings), "objects merge, arrays are replaced")
	assert.Equal(t, map[string]string{"bus": "bus"}, doc.Resources["store"].Deps)
	assert.Equal(t, "test.Thing", doc.Resources["extra"].Kind)
	qa := doc.Agents["qa"]
	assert.Equal(t, "QA", qa.Card.Name)
	assert.Equal(t, "from json", qa.Card.Description)
	assert.Equal(t, "fake", qa.Engine.Impl)
	assert.JSONEq(t, `{"note":"prod"}`, string(qa.Engine.Settings))
	assert.Equal(t, []string{"log"}, qa.Capabilities)
	assert.Equal(t, "Writer", doc.Agents["writer"].Card.Name)
	assert.JSONEq(t, `{"event_bus":"bus","sessions":{"idle_timeout":"10m","sink_buffer":512}}`, string(doc.Runtime))
	assert.Equal(t, "base.yaml", doc.File())

	assert.Equal(t, "top", prov["version"])
	assert.Equal(t, "base", prov["resources.bus.kind"])
	assert.Equal(t, "base", prov["resources.store.settings.note"])
	assert.Equal(t, "prod", prov["resources.store.settings.items"])
	assert.Equal(t, "prod", prov["resources.store.settings.items[0]"])
	assert.Equal(t, "prod", prov["resources.extra.kind"])
	assert.Equal(t, "prod", prov["agents.qa.engine.settings.note"])
	assert.Equal(t, "base", prov["agents.qa.engine.kind"])
	assert.Equal(t, "top", prov["agents.qa.card.description"])
	assert.Equal(t, "prod", prov["runtime.sessions.sink_buffer"])
	assert.Equal(t, "base", prov["runtime.sessions.idle_timeout"])
	_, ok := prov["resources.store.settings.items[1]"]
	assert.False(t, ok, "the replaced array's old items are gone")

	p, ok := doc.Pos("agents.qa.engine.settings.note")
	require.True(t, ok)
	assert.Equal(t, deploy.Position{File: "prod.yaml", Line: 8, Column: 25}, p, "positions name the layer that wrote the value")
	p, ok = doc.Pos("agents.qa.card.description")
	require.True(t, ok)
	assert.Equal(t, "top.json", p.File)
	p, ok = doc.Pos("resources.bus")
	require.True(t, ok)
	assert.Equal(t, deploy.Position{File: "base.yaml", Line: 3, Column: 3}, p)
}

func TestLoadLayersErrors(t *testing.T) {
	// REF 3.4.6
	t.Parallel()
	cases := []struct {
		name   string
		layers []deploy.Layer
		kind   *fault.Kind
		msg    string
	}{
		{"no layers", nil, fault.Validation, "no layers"},
		{"unnamed layer", []deploy.Layer{{Data: []byte(baseLayer)}}, fault.Validation, "name is required"},
		{"same name twice", []deploy.Layer{{Name: "a", Data: []byte(baseLayer)}, {Name: "a", Priority: 1}}, fault.Conflict, "given twice"},
		{"lowest layer incomplete", []deploy.Layer{
			{Name: "base", Data: []byte("resources: {bus: {kind: test.Bus}}\n")},
			{Name: "top", Priority: 1, Data: []byte("version: v1\n")},
		}, fault.Validation, "base:1: version is required"},
		{"overlay unknown field", []deploy.Layer{
			{Name: "base", Data: []byte(baseLayer), File: "base.yaml"},
			{Name: "top", Priority: 1, Data: []byte("\nresources:\n  bus: {kindd: x}\n"), File: "top.yaml"},
		}, fault.Validation, `top.yaml:3: resources.bus: unknown field "kindd"`},
		{"overlay breaks the document", []deploy.Layer{
			{Name: "base", Data: []byte(baseLayer), File: "base.yaml"},
			{Name: "top", Priority: 1, Data: []byte("agents:\n  qa:\n    card: {name: ''}\n"), File: "top.yaml"},
		}, fault.Validation, "top.yaml:3: agents.qa: card.name is required"},
		{"overlay not a mapping", []deploy.Layer{
			{Name: "base", Data: []byte(baseLayer)},
			{Name: "top", Priority: 1, Data: []byte("- a\n")},
		}, fault.Validation, "a layer must be a mapping"},
		{"overlay syntax", []deploy.Layer{
			{Name: "base", Data: []byte(baseLayer)},
			{Name: "top", Priority: 1, Data: []byte("a: [\n")},
		}, fault.Validation, "top:"},
		{"overlay repeated key", []deploy.Layer{
			{Name: "base", Data: []byte(baseLayer)},
			{Name: "top", Priority: 1, Data: []byte("version: a\nversion: b\n")},
		}, fault.Validation, `top:2: key "version" is repeated`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := deploy.LoadLayers(tc.layers, deploy.ParseConfig{})
			require.ErrorIs(t, err, tc.kind)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestLoadLayersSingleAndEmpty(t *testing.T) {
	// REF 3.4.6
	t.Parallel()
	doc, prov, err := deploy.LoadLayers([]deploy.Layer{
		{Name: "base", Data: []byte(baseLayer)},
		{Name: "empty", Priority: 1, Data: []byte("# nothing to change\n")},
	}, deploy.ParseConfig{Filename: "merged", BaseDir: "dir"})
	require.NoError(t, err)
	plain := mustParse(t, baseLayer)
	assert.Equal(t, plain.Hash(), doc.Hash(), "an empty overlay changes nothing")
	assert.Equal(t, "merged", doc.File())
	assert.Equal(t, "dir", doc.BaseDir())
	for path, layer := range prov {
		assert.Equal(t, "base", layer, path)
	}
}

func TestLoadLayersTestdata(t *testing.T) {
	// REF 3.4.6
	t.Parallel()
	base, err := os.ReadFile(filepath.Join(testdataDir, "full.yaml"))
	require.NoError(t, err)
	over, err := os.ReadFile(filepath.Join(testdataDir, "overlay.yaml"))
	require.NoError(t, err)
	doc, prov, err := deploy.LoadLayers([]deploy.Layer{
		{Name: "full", Data: base, File: "full.yaml"},
		{Name: "overlay", Priority: 1, Data: over, File: "overlay.yaml"},
	}, deploy.ParseConfig{BaseDir: testdataDir})
	require.NoError(t, err)
	assert.Equal(t, []string{"log"}, doc.Agents["qa"].Capabilities)
	assert.Equal(t, "Editor", doc.Agents["editor"].Card.Name)
	assert.Equal(t, "overlay", prov["resources.plain.settings.note"])
	assert.Equal(t, "full", prov["resources.plain.settings.graph.nodes[1].id"])
	assert.Equal(t, "overlay", prov["runtime.sessions.max_sessions"])
}

// REF 3.4.6.1: a layer that changes a resource's or an engine's kind or
// impl replaces it whole — the deps and settings below belong to another
// factory — while a layer that keeps them merges key by key.
func TestLoadLayersReplaceComponent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		overlay   string
		path      string // the component
		want      string // its kind, impl, deps and settings after the merge, as JSON
		overlayed []string
	}{
		{"impl changed: replaced whole", "resources:\n  store: {kind: test.Store, impl: other, settings: {url: x}}\n",
			"resources.store", `{"kind":"test.Store","impl":"other","settings":{"url":"x"}}`,
			[]string{"resources.store.kind", "resources.store.impl", "resources.store.settings.url"}},
		{"kind changed: replaced whole", "resources:\n  store: {kind: test.Other, impl: deps}\n",
			"resources.store", `{"kind":"test.Other","impl":"deps"}`, []string{"resources.store.kind", "resources.store.impl"}},
		{"same impl written again: merged", "resources:\n  store: {kind: test.Store, impl: deps, settings: {note: top}}\n",
			"resources.store", `{"kind":"test.Store","impl":"deps","deps":{"bus":"bus"},"settings":{"note":"top","items":["a","b"]}}`,
			[]string{"resources.store.kind", "resources.store.impl", "resources.store.settings.note"}},
		{"no impl: merged", "resources:\n  store: {settings: {note: top}}\n",
			"resources.store", `{"kind":"test.Store","impl":"deps","deps":{"bus":"bus"},"settings":{"note":"top","items":["a","b"]}}`,
			[]string{"resources.store.settings.note"}},
		{"engine impl changed: replaced whole", "agents:\n  qa:\n    engine: {kind: agent.Engine, impl: other}\n",
			"agents.qa.engine", `{"kind":"agent.Engine","impl":"other"}`, []string{"agents.qa.engine.kind", "agents.qa.engine.impl"}},
		{"engine settings only: merged", "agents:\n  qa:\n    engine: {settings: {more: 1}}\n",
			"agents.qa.engine", `{"kind":"agent.Engine","impl":"fake","settings":{"note":"base","more":1}}`,
			[]string{"agents.qa.engine.settings.more"}},
		{"impl inside settings is a setting: merged", "resources:\n  store: {settings: {impl: x}}\n",
			"resources.store", `{"kind":"test.Store","impl":"deps","deps":{"bus":"bus"},"settings":{"note":"base","items":["a","b"],"impl":"x"}}`,
			[]string{"resources.store.settings.impl"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, prov, err := deploy.LoadLayers([]deploy.Layer{
				{Name: "base", Data: []byte(baseLayer), File: "base.yaml"},
				{Name: "top", Priority: 1, Data: []byte(tc.overlay), File: "top.yaml"},
			}, deploy.ParseConfig{})
			require.NoError(t, err)
			var got any
			if tc.path == "agents.qa.engine" {
				got = doc.Agents["qa"].Engine
			} else {
				got = doc.Resources["store"]
			}
			b, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
			for _, leaf := range tc.overlayed {
				assert.Equal(t, "top", prov[leaf], leaf)
			}
			for leaf, layer := range prov {
				if strings.HasPrefix(leaf, tc.path+".") && !slices.Contains(tc.overlayed, leaf) && layer == "top" {
					t.Errorf("%s comes from the top layer", leaf)
				}
			}
		})
	}
}

// REF 3.4.6.1: a component a layer replaces must be complete in that
// layer; what is missing or wrong is an error at the layer's file and
// line.
func TestLoadLayersReplaceComponentErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, overlay, msg string }{
		{"no kind", "\nresources:\n  store: {impl: other}\n", "top.yaml:3: resources.store: kind is required"},
		{"unknown field", "\nresources:\n  store:\n    kind: test.Store\n    impl: other\n    setings: {url: x}\n",
			`top.yaml:6: resources.store: unknown field "setings"`},
		{"engine without kind", "agents:\n  qa:\n    engine: {impl: other}\n", "top.yaml:3: agents.qa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := deploy.LoadLayers([]deploy.Layer{
				{Name: "base", Data: []byte(baseLayer), File: "base.yaml"},
				{Name: "top", Priority: 1, Data: []byte(tc.overlay), File: "top.yaml"},
			}, deploy.ParseConfig{})
			require.ErrorIs(t, err, fault.Validation)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}
