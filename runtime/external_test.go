package runtime_test

import (
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type pool struct{ closed bool }

func (p *pool) Close() error { p.closed = true; return nil }

func withPool(t *testing.T, p *pool, contract string) func(*runtime.Builder) {
	return func(b *runtime.Builder) {
		require.NoError(t, b.WithExternalResource(runtime.ExternalResource{
			ExternalDependency: runtime.ExternalDependency{Name: "db", Contract: contract}, Value: p}))
	}
}

const externalDoc = `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  repo: {kind: test.Thing, deps: {db: db}}
runtime:
  event_bus: events
  external_deps:
    - name: db
      contract: db.Pool
`

// REF 1.7.4, 1.7.6, 1.6.4: a resource consumes an external value by
// name; the runtime borrows it, never closes it and never lends it out.
func TestExternalDependencyIsConsumedAndBorrowed(t *testing.T) {
	p := &pool{}
	rt, _ := build(t, externalDoc, withPool(t, p, "db.Pool"))
	v, ok := rt.Resource("repo")
	require.True(t, ok)
	assert.Same(t, p, v.(*thing).deps["db"], "1.7.4: the consumer receives the injected value")
	_, ok = rt.Resource("db")
	assert.False(t, ok, "1.6.4: external values are not resources")
	require.NoError(t, rt.Close())
	assert.False(t, p.closed, "1.7.6: Close does not close external values")
}

// REF 1.3.4, 1.7.2: WithExternalResource adds one caller-owned value,
// validated.
func TestWithExternalResourceValidation(t *testing.T) {
	var nilPool *pool
	tests := []struct {
		name string
		r    runtime.ExternalResource
		kind *fault.Kind
	}{
		{"blank name", runtime.ExternalResource{ExternalDependency: runtime.ExternalDependency{Name: " ", Contract: "c"}, Value: 1}, fault.Validation},
		{"slash", runtime.ExternalResource{ExternalDependency: runtime.ExternalDependency{Name: "a/b", Contract: "c"}, Value: 1}, fault.Validation},
		{"no contract", runtime.ExternalResource{ExternalDependency: runtime.ExternalDependency{Name: "a"}, Value: 1}, fault.Validation},
		{"nil value", runtime.ExternalResource{ExternalDependency: runtime.ExternalDependency{Name: "a", Contract: "c"}}, fault.Validation},
		{"typed nil value", runtime.ExternalResource{ExternalDependency: runtime.ExternalDependency{Name: "a", Contract: "c"}, Value: nilPool}, fault.Validation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := runtime.NewBuilder(testRegistry(t, nil))
			assert.ErrorIs(t, b.WithExternalResource(tt.r), tt.kind)
		})
	}
	b := runtime.NewBuilder(testRegistry(t, nil))
	r := runtime.ExternalResource{ExternalDependency: runtime.ExternalDependency{Name: "a", Contract: "c"}, Value: 1}
	require.NoError(t, b.WithExternalResource(r))
	r.Name = " a "
	assert.ErrorIs(t, b.WithExternalResource(r), fault.Conflict, "a duplicate injection is a Conflict")
}

// REF 1.7.3: declarations and injections must match at Build.
func TestBuildMatchesExternals(t *testing.T) {
	t.Run("declared but not injected", func(t *testing.T) {
		err, _ := buildErr(t, externalDoc)
		assert.ErrorIs(t, err, fault.Validation)
		assert.Contains(t, err.Error(), "declared but no external resource was injected")
		assert.Contains(t, err.Error(), "deploy.yaml:")
	})
	t.Run("contract mismatch", func(t *testing.T) {
		err, _ := buildErr(t, externalDoc, withPool(t, &pool{}, "db.Other"))
		assert.ErrorIs(t, err, fault.Validation)
		assert.Contains(t, err.Error(), `declared contract "db.Pool"`)
	})
	t.Run("injected but not declared", func(t *testing.T) {
		err, _ := buildErr(t, minimalDoc, withPool(t, &pool{}, "db.Pool"))
		assert.ErrorIs(t, err, fault.Validation)
		assert.Contains(t, err.Error(), `"db" was injected but the document does not declare it`)
	})
}

// REF 1.7.4: the consumer's DepSpec type must equal the contract.
func TestExternalContractMustMatchConsumer(t *testing.T) {
	err, _ := buildErr(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  repo: {kind: test.Thing, deps: {dep: db}}
runtime:
  event_bus: events
  external_deps: [{name: db, contract: db.Pool}]
`, withPool(t, &pool{}, "db.Pool"))
	assert.ErrorIs(t, err, fault.Validation)
}

// REF 1.7.5: an external dependency may not share a name with a
// document resource.
func TestExternalNameCollision(t *testing.T) {
	err, _ := buildErr(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  db: {kind: test.Thing}
runtime:
  event_bus: events
  external_deps: [{name: db, contract: db.Pool}]
`, withPool(t, &pool{}, "db.Pool"))
	assert.ErrorIs(t, err, fault.Conflict)
}
