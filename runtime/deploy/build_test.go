package deploy_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustParse(t testing.TB, text string) *deploy.Document {
	t.Helper()
	doc, err := deploy.ParseWithConfig([]byte(text), deploy.ParseConfig{Filename: "d.yaml"})
	require.NoError(t, err)
	return doc
}

func build(t testing.TB, text string, external map[string]deploy.External) (*deploy.Result, *journal, error) {
	t.Helper()
	j := &journal{}
	res, err := deploy.Build(context.Background(), mustParse(t, text),
		deploy.Options{Registry: testRegistry(j), External: external})
	return res, j, err
}

func TestBuildOrder(t *testing.T) {
	// REF 3.4.1
	t.Parallel()
	res, j, err := build(t, `version: v1
resources:
  zeta: {kind: test.Bus, impl: memory}
  alpha: {kind: test.Store, impl: deps, deps: {bus: zeta}}
  mid: {kind: test.Bus, impl: memory}
  beta: {kind: test.Store, impl: deps, deps: {bus: mid, tools: alpha}}
  aaa: {kind: test.Thing}
`, nil)
	require.NoError(t, err)
	want := []string{"aaa", "mid", "zeta", "alpha", "beta"}
	assert.Equal(t, want, res.Order(), "dependencies first, ties alphabetical")
	assert.Equal(t, []string{"aaa", "alpha", "beta", "mid", "zeta"}, res.Names())
	assert.Equal(t, []string{
		"new aaa test.Thing/", "new mid test.Bus/memory", "new zeta test.Bus/memory",
		"new alpha test.Store/deps", "new beta test.Store/deps",
	}, j.list())
	for range 5 {
		again, _, err := build(t, "version: v1\nresources:\n  b: {kind: test.Thing}\n  a: {kind: test.Thing}\n  c: {kind: test.Thing}\n", nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b", "c"}, again.Order())
	}
}

func TestBuildGraphErrors(t *testing.T) {
	// REF 3.4.1
	t.Parallel()
	cases := []struct {
		name, doc string
		kind      *fault.Kind
		msg       string
		path      string
	}{
		{"missing resource", "version: v1\nresources:\n  s: {kind: test.Store, impl: deps, deps: {bus: nope}}\n",
			fault.Validation, `dep "bus" references missing resource "nope"`, "resources.s.deps.bus"},
		{"missing item target", "version: v1\nresources:\n  s: {kind: test.Store, impl: deps, deps: {bus: nope/x}}\n",
			fault.Validation, `references missing resource "nope"`, "resources.s.deps.bus"},
		{"self cycle", "version: v1\nresources:\n  a: {kind: test.Pool, impl: many, deps: {tools: a}}\n",
			fault.Validation, "dependency cycle: a -> a", "resources.a"},
		{"cycle named in order", "version: v1\nresources:\n  x: {kind: test.Pool, impl: many, deps: {tools: y}}\n" +
			"  y: {kind: test.Pool, impl: many, deps: {tools: z}}\n  z: {kind: test.Pool, impl: many, deps: {tools.a: x}}\n" +
			"  free: {kind: test.Thing}\n  user: {kind: test.Pool, impl: many, deps: {tools: y}}\n",
			fault.Validation, "dependency cycle: x -> y -> z -> x", "resources.x"},
		{"cycle through an item", "version: v1\nresources:\n  b: {kind: test.Pool, impl: many, deps: {tools: c/x}}\n" +
			"  c: {kind: test.Pool, impl: many, deps: {tools: b}}\n",
			fault.Validation, "dependency cycle: b -> c -> b", "resources.b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, j, err := build(t, tc.doc, nil)
			assert.Nil(t, res)
			require.ErrorIs(t, err, tc.kind)
			assert.ErrorContains(t, err, tc.msg)
			var de *deploy.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.path, de.Path)
			assert.Empty(t, j.list(), "nothing is built when the graph is wrong")
		})
	}
}

func TestBuildRollsBack(t *testing.T) {
	// REF 3.4.1
	t.Parallel()
	res, j, err := build(t, `version: v1
resources:
  a: {kind: test.Bus, impl: memory}
  b: {kind: test.Store, impl: deps, deps: {bus: a}}
  c: {kind: test.Thing, settings: {fail: disk full}}
  d: {kind: test.Thing}
`, nil)
	assert.Nil(t, res)
	require.ErrorIs(t, err, fault.Validation, "a factory error without a kind is a Validation error")
	assert.ErrorContains(t, err, `d.yaml:5: resources.c: build resource "c": disk full`)
	assert.Equal(t, []string{
		"new a test.Bus/memory", "new b test.Store/deps",
		"close b", "close a",
	}, j.list(), "built values are closed in reverse order; later ones are never built")
}

func TestBuildKeepsFactoryErrorKind(t *testing.T) {
	// REF 3.4.1
	t.Parallel()
	reg := resource.NewRegistry()
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "k"}, func(context.Context, resource.Input) (any, error) {
		return nil, fault.New(fault.NotAvailable, "dial", "connection refused")
	}))
	_, err := deploy.Build(context.Background(), mustParse(t, "version: v1\nresources:\n  db: {kind: k}\n"), deploy.Options{Registry: reg})
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.EqualError(t, err, `d.yaml:3: resources.db: build resource "db": dial: connection refused`)
}

func TestBuildDepChecks(t *testing.T) {
	// REF 3.6.6
	t.Parallel()
	cases := []struct {
		name, deps string
		msg        string
	}{
		{"all declared", "{bus: bus, tools: bus, tools.x: bus}", ""},
		{"undeclared", "{bus: bus, cache: bus}", `undeclared dep "cache"`},
		{"many prefix needs a suffix", "{bus: bus, tools.: bus}", `undeclared dep "tools."`},
		{"not many: no suffix", "{bus: bus, bus.x: bus}", `undeclared dep "bus.x"`},
		{"required missing", "{tools: bus}", `required dep "bus" missing`},
		{"required present", "{bus: bus}", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, _, err := build(t, "version: v1\nresources:\n  bus: {kind: test.Bus, impl: memory}\n  s: {kind: test.Store, impl: deps, deps: "+tc.deps+"}\n", nil)
			if tc.msg == "" {
				require.NoError(t, err)
				require.NoError(t, res.Close())
				return
			}
			require.ErrorIs(t, err, fault.Validation)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
	_, _, err := build(t, "version: v1\nresources:\n  p: {kind: test.Pool, impl: many}\n", nil)
	assert.ErrorContains(t, err, `required many dep "tools" missing`)
	res, _, err := build(t, "version: v1\nresources:\n  bus: {kind: test.Bus, impl: memory}\n  p: {kind: test.Pool, impl: many, deps: {tools.only: bus}}\n", nil)
	require.NoError(t, err, "a suffixed key binds a required many dep")
	require.NoError(t, res.Close())
}

func TestBuildManyDepsSorted(t *testing.T) {
	// REF 3.6.4
	t.Parallel()
	var got []resource.NamedDep
	reg := resource.NewRegistry()
	reg.MustRegister(
		resource.FactoryFunc(resource.Spec{Kind: "v"}, func(_ context.Context, in resource.Input) (any, error) { return in.Name, nil }),
		resource.FactoryFunc(resource.Spec{Kind: "user", Deps: []resource.DepSpec{{Name: "tools", Type: "v", Many: true}}},
			func(_ context.Context, in resource.Input) (any, error) {
				got = in.DepsMany("tools")
				return nil, nil
			}),
	)
	doc := mustParse(t, "version: v1\nresources:\n  a: {kind: v}\n  b: {kind: v}\n  c: {kind: v}\n"+
		"  u: {kind: user, deps: {tools.zz: a, tools: b, tools.aa: c}}\n")
	res, err := deploy.Build(context.Background(), doc, deploy.Options{Registry: reg})
	require.NoError(t, err)
	defer res.Close()
	require.Len(t, got, 3)
	assert.Equal(t, []string{"tools", "tools.aa", "tools.zz"}, []string{got[0].Key, got[1].Key, got[2].Key})
	assert.Equal(t, []any{"b", "c", "a"}, []any{got[0].Value, got[1].Value, got[2].Value})
	assert.Equal(t, "aa", got[1].Suffix())
}

func TestBuildItems(t *testing.T) {
	// REF 3.2.2
	t.Parallel()
	res, _, err := build(t, `version: v1
resources:
  tools: {kind: test.Catalog, impl: items, settings: {items: [search, fetch]}}
  pool: {kind: test.Pool, impl: many, deps: {tools: tools/search, tools.f: tools/fetch, tools.all: tools}}
`, nil)
	require.NoError(t, err)
	defer res.Close()
	v, ok := res.Value("pool")
	require.True(t, ok)
	deps := thingOf(v).deps
	assert.Equal(t, "tools/search", deps["tools"], "an item ref binds the resolved item")
	assert.Equal(t, "tools/fetch", deps["tools.f"])
	assert.IsType(t, &catalog{}, deps["tools.all"], "a plain ref binds the value itself")

	_, _, err = build(t, "version: v1\nresources:\n  bus: {kind: test.Bus, impl: memory}\n  p: {kind: test.Pool, impl: many, deps: {tools: bus/x}}\n", nil)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `resource "bus" does not expose items`)
	_, _, err = build(t, "version: v1\nresources:\n  c: {kind: test.Catalog, impl: items}\n  p: {kind: test.Pool, impl: many, deps: {tools: c/x}}\n", nil)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `resource "c" has no item "x"`)
}

func TestBuildEmptyImpl(t *testing.T) {
	// REF 3.2.1
	t.Parallel()
	res, j, err := build(t, "version: v1\nresources:\n  a: {kind: test.Thing}\n  b: {kind: test.Thing, impl: plain}\n", nil)
	require.NoError(t, err)
	defer res.Close()
	assert.Equal(t, []string{"new a test.Thing/", "new b test.Thing/plain"}, j.list())
	_, _, err = build(t, "version: v1\nresources:\n  a: {kind: test.Bus}\n", nil)
	assert.ErrorContains(t, err, "no factory for test.Bus/", "an empty impl is an exact key, not a wildcard")
}

func TestBuildArguments(t *testing.T) {
	t.Parallel()
	doc := mustParse(t, "version: v1\n")
	reg := resource.NewRegistry()
	_, err := deploy.Build(nil, doc, deploy.Options{Registry: reg})
	assert.ErrorIs(t, err, fault.Validation)
	_, err = deploy.Build(context.Background(), nil, deploy.Options{Registry: reg})
	assert.ErrorIs(t, err, fault.Validation)
	_, err = deploy.Build(context.Background(), doc, deploy.Options{})
	assert.ErrorIs(t, err, fault.Validation)
	_, err = deploy.Build(context.Background(), &deploy.Document{}, deploy.Options{Registry: reg})
	assert.ErrorContains(t, err, "version is required", "Build validates the document")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = deploy.Build(ctx, mustParse(t, "version: v1\nresources:\n  a: {kind: test.Thing}\n"), deploy.Options{Registry: testRegistry(&journal{})})
	assert.ErrorIs(t, err, fault.Aborted)
}

func TestBuildDefaultLoader(t *testing.T) {
	// REF 3.2.3
	t.Parallel()
	doc, err := deploy.ParseWithConfig([]byte("version: v1\nresources:\n  t: {kind: test.Catalog, impl: items, settings: {file: files/settings.yaml}}\n"),
		deploy.ParseConfig{BaseDir: testdataDir})
	require.NoError(t, err)
	res, err := deploy.Build(context.Background(), doc, deploy.Options{Registry: testRegistry(&journal{})})
	require.NoError(t, err, "without a loader, references resolve against the document's base directory")
	defer res.Close()
	v, _ := res.Value("t")
	assert.Equal(t, []string{"search", "fetch"}, v.(*catalog).items)
}

func TestExternalDependencies(t *testing.T) {
	// REF 1.7.4
	t.Parallel()
	db := &thing{name: "db", j: &journal{}}
	ext := map[string]deploy.External{"db": {Contract: "db.Pool", Value: db}}
	res, _, err := build(t, "version: v1\nresources:\n  bus: {kind: test.Bus, impl: memory}\n  s: {kind: test.Store, impl: deps, deps: {bus: bus, db: db}}\n", ext)
	require.NoError(t, err)
	v, _ := res.Value("s")
	assert.Same(t, db, thingOf(v).deps["db"], "the factory receives the caller's value")

	// REF 1.7.6
	_, listed := res.Value("db")
	assert.False(t, listed, "external values are not listed")
	assert.Equal(t, []string{"bus", "s"}, res.Names())
	require.NoError(t, res.Close())
	assert.Zero(t, db.closed, "external values are never closed")

	// REF 1.7.4
	// REF 3.6.6
	_, _, err = build(t, "version: v1\nresources:\n  bus: {kind: test.Bus, impl: memory}\n  s: {kind: test.Store, impl: deps, deps: {bus: bus, db: db}}\n",
		map[string]deploy.External{"db": {Contract: "sql.DB", Value: db}})
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `external dependency "db" has contract "sql.DB", the factory wants "db.Pool"`)
	_, _, err = build(t, "version: v1\nresources:\n  s: {kind: test.Store, impl: deps, deps: {bus: db}}\n", ext)
	assert.ErrorIs(t, err, fault.Validation, "an external counts only where the dep type equals its contract")

	// REF 1.7.5
	_, _, err = build(t, "version: v1\nresources:\n  db: {kind: test.Bus, impl: memory}\n", ext)
	assert.ErrorIs(t, err, fault.Conflict)
	var de *deploy.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "resources.db", de.Path)
}

func TestExternalDependencyShape(t *testing.T) {
	// REF 1.7.1
	// REF 1.7.2
	t.Parallel()
	for name, e := range map[string]deploy.External{
		"":    {Contract: "c", Value: 1},
		"a/b": {Contract: "c", Value: 1},
		"nc":  {Value: 1},
		"nil": {Contract: "c"},
		"typ": {Contract: "c", Value: (*thing)(nil)},
	} {
		_, _, err := build(t, "version: v1\n", map[string]deploy.External{name: e})
		assert.ErrorIs(t, err, fault.Validation, name)
	}
}

func TestExternalsAreNeverWiredOrClosed(t *testing.T) {
	// REF 1.7.6
	t.Parallel()
	j := &journal{}
	db := &wirer{thing: &thing{name: "db", j: j}}
	doc := mustParse(t, "version: v1\nresources:\n  bus: {kind: test.Bus, impl: memory}\n"+
		"agents:\n  qa: {card: {name: QA}, engine: {kind: agent.Engine, impl: fake, deps: {bus: bus, db: db}}}\n")
	res, err := deploy.Deploy(context.Background(), doc, deploy.Options{
		Registry: testRegistry(j),
		External: map[string]deploy.External{"db": {Contract: "db.Pool", Value: db}},
	})
	require.NoError(t, err)
	a, ok := res.Agent("qa")
	require.True(t, ok)
	assert.Same(t, db, a.Engine.(*engine).deps["db"], "agent engines receive external values")
	require.NoError(t, res.Close())
	assert.Equal(t, []string{"new bus test.Bus/memory", "new qa agent.Engine/fake", "close bus", "close qa"}, j.list(),
		"the external value is neither wired nor closed")
	assert.Zero(t, db.closed)
}
