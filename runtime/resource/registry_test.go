package resource_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func factory(spec resource.Spec) resource.Factory {
	return resource.FactoryFunc(spec, func(_ context.Context, in resource.Input) (any, error) {
		return spec.Key() + " " + in.Name, nil
	})
}

func TestRegistryIsAValue(t *testing.T) {
	// REF 3.6.1
	t.Parallel()
	a, b := resource.NewRegistry(), resource.NewRegistry()
	assert.Empty(t, a.Specs(), "a new registry starts empty")
	require.NoError(t, a.Register(factory(resource.Spec{Kind: "event.Bus", Impl: "memory"})))
	_, ok := b.Lookup("event.Bus", "memory")
	assert.False(t, ok, "registries share nothing")
	assert.Empty(t, b.Specs())
	require.NoError(t, b.Register(factory(resource.Spec{Kind: "event.Bus", Impl: "memory"})),
		"the same factory may be registered in another registry")

	var zero resource.Registry
	require.NoError(t, zero.Register(factory(resource.Spec{Kind: "k"})), "the zero value is usable")
	_, ok = zero.Lookup("k", "")
	assert.True(t, ok)
}

func TestRegisterValidatesSpec(t *testing.T) {
	// REF 3.6.2
	t.Parallel()
	cases := []struct {
		name string
		spec resource.Spec
		msg  string
	}{
		{"kind is required", resource.Spec{Impl: "x"}, "spec kind is required"},
		{"blank kind", resource.Spec{Kind: " "}, "spec kind is required"},
		{"dep name is required", resource.Spec{Kind: "k", Deps: []resource.DepSpec{{Type: "t"}}}, "deps[0]: name is required"},
		{"dep type is required", resource.Spec{Kind: "k", Deps: []resource.DepSpec{{Name: "bus"}}}, `dep "bus": type is required`},
		{"dep name ends in a dot", resource.Spec{Kind: "k", Deps: []resource.DepSpec{{Name: "tools.", Type: "t", Many: true}}}, "must not end in '.'"},
		{"dep declared twice", resource.Spec{Kind: "k", Deps: []resource.DepSpec{{Name: "a", Type: "t"}, {Name: "a", Type: "u"}}}, `dep "a" is declared twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := resource.NewRegistry()
			err := reg.Register(factory(tc.spec))
			require.ErrorIs(t, err, fault.Validation)
			assert.ErrorContains(t, err, tc.msg)
			assert.Empty(t, reg.Specs())
		})
	}
	assert.ErrorIs(t, resource.NewRegistry().Register(nil), fault.Validation)
	ok := resource.Spec{Kind: "k", Deps: []resource.DepSpec{{Name: "a", Type: "t", Required: true}, {Name: "b", Type: "t", Many: true}}}
	assert.NoError(t, ok.Validate())
}

func TestRegisterDuplicate(t *testing.T) {
	// REF 3.6.2
	t.Parallel()
	reg := resource.NewRegistry()
	require.NoError(t, reg.Register(factory(resource.Spec{Kind: "event.Bus", Impl: "memory"})))
	err := reg.Register(factory(resource.Spec{Kind: "event.Bus", Impl: "memory"}))
	require.ErrorIs(t, err, fault.Conflict)
	assert.ErrorContains(t, err, "event.Bus/memory is already registered")

	err = reg.Register(factory(resource.Spec{Kind: "a"}), factory(resource.Spec{Kind: "b"}), factory(resource.Spec{Kind: "a"}))
	require.ErrorIs(t, err, fault.Conflict, "a duplicate inside one call")
	assert.Len(t, reg.Specs(), 1, "nothing is added when any factory is refused")

	err = reg.Register(factory(resource.Spec{Kind: "c"}), factory(resource.Spec{}))
	require.ErrorIs(t, err, fault.Validation)
	_, ok := reg.Lookup("c", "")
	assert.False(t, ok)
}

func TestMustRegisterPanics(t *testing.T) {
	// REF 3.6.2
	t.Parallel()
	reg := resource.NewRegistry()
	assert.NotPanics(t, func() { reg.MustRegister(factory(resource.Spec{Kind: "k"})) })
	assert.Panics(t, func() { reg.MustRegister(factory(resource.Spec{Kind: "k"})) })
	assert.Panics(t, func() { reg.MustRegister(factory(resource.Spec{})) })
}

func TestLookupIsExact(t *testing.T) {
	// REF 3.6.2
	t.Parallel()
	reg := resource.NewRegistry()
	reg.MustRegister(factory(resource.Spec{Kind: "model.Provider", Impl: "openai"}), factory(resource.Spec{Kind: "model.Provider"}))
	for _, tc := range []struct {
		kind, impl string
		ok         bool
	}{
		{"model.Provider", "openai", true},
		{"model.Provider", "", true},
		{"model.Provider", "OpenAI", false},
		{"model.provider", "openai", false},
		{"model.Provider", "open", false},
		{"model", "Provider/openai", false},
	} {
		f, ok := reg.Lookup(tc.kind, tc.impl)
		assert.Equal(t, tc.ok, ok, "%s/%s", tc.kind, tc.impl)
		if ok {
			assert.Equal(t, tc.kind, f.Spec().Kind)
			assert.Equal(t, tc.impl, f.Spec().Impl)
		}
	}
}

func TestSpecsSorted(t *testing.T) {
	// REF 3.6.2
	t.Parallel()
	reg := resource.NewRegistry()
	reg.MustRegister(
		factory(resource.Spec{Kind: "sandbox.Runtime", Impl: "wasm"}),
		factory(resource.Spec{Kind: "event.Bus", Impl: "memory"}),
		factory(resource.Spec{Kind: "sandbox.Runtime", Impl: "js"}),
		factory(resource.Spec{Kind: "agent.Engine", Impl: "graph"}),
	)
	var keys []string
	for _, s := range reg.Specs() {
		keys = append(keys, s.Key())
	}
	assert.Equal(t, []string{"agent.Engine/graph", "event.Bus/memory", "sandbox.Runtime/js", "sandbox.Runtime/wasm"}, keys)
}

func TestFactoryContract(t *testing.T) {
	// REF 3.6.3
	t.Parallel()
	spec := resource.Spec{Kind: "k", Impl: "i", ItemType: "t"}
	f := factory(spec)
	assert.Equal(t, spec, f.Spec())
	v, err := f.New(context.Background(), resource.Input{Name: "n"})
	require.NoError(t, err)
	assert.Equal(t, "k/i n", v)
	assert.Equal(t, "k/", resource.Spec{Kind: "k"}.Key())
}

func TestMatchDep(t *testing.T) {
	// REF 3.6.4
	// REF 3.6.6
	t.Parallel()
	spec := resource.Spec{Kind: "k", Deps: []resource.DepSpec{
		{Name: "bus", Type: "event.Bus", Required: true},
		{Name: "tools", Type: "tool.Assembly", Many: true},
		{Name: "tools.special", Type: "tool.Special"},
	}}
	for _, tc := range []struct {
		key, want string
	}{
		{"bus", "event.Bus"},
		{"tools", "tool.Assembly"},
		{"tools.search", "tool.Assembly"},
		{"tools.a.b", "tool.Assembly"},
		{"tools.special", "tool.Special"},
		{"tools.", ""},
		{"bus.x", ""},
		{"toolsx", ""},
		{"", ""},
	} {
		d, ok := spec.MatchDep(tc.key)
		assert.Equal(t, tc.want != "", ok, tc.key)
		assert.Equal(t, tc.want, d.Type, tc.key)
	}
}
