package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const wiredDoc = `version: v1
resources:
  bus: {kind: test.Bus, impl: memory}
  zhub: {kind: test.Wire, impl: ok}
  ahub: {kind: test.Wire, impl: ok}
  binder: {kind: test.Binder, impl: ok}
  nothing: {kind: test.Nil, impl: typed}
agents:
  zed:
    card: {name: Zed}
    engine: {kind: agent.Engine, impl: fake, deps: {bus: bus}}
  amy:
    card: {name: Amy}
    engine: {kind: agent.Engine, impl: fake}
    prepare: [{type: ok}]
    observe: [{type: ok}]
    referees: [{type: ok, deps: {bus: bus}}]
    commit: [{type: ok}, {type: ok}]
`

func deployText(t testing.TB, text string) (*deploy.Result, *journal) {
	t.Helper()
	j := &journal{}
	res, err := deploy.Deploy(context.Background(), mustParse(t, text), deploy.Options{Registry: testRegistry(j)})
	require.NoError(t, err)
	return res, j
}

func TestWireOrder(t *testing.T) {
	// REF 3.4.2
	// REF 3.6.7
	t.Parallel()
	j := &journal{}
	res, err := deploy.Build(context.Background(), mustParse(t, wiredDoc), deploy.Options{Registry: testRegistry(j)})
	require.NoError(t, err)
	assert.Empty(t, res.AgentNames(), "Build binds no agent")
	require.NoError(t, res.Wire(context.Background()))
	assert.Equal(t, []string{
		"new ahub test.Wire/ok", "new binder test.Binder/ok", "new bus test.Bus/memory", "new nothing test.Nil/typed", "new zhub test.Wire/ok",
		"wire ahub", "wire zhub",
		"new amy agent.Engine/fake", "new amy hook.prepare/ok", "new amy hook.observe/ok", "new amy hook.referee/ok",
		"new amy hook.commit/ok", "new amy hook.commit/ok",
		"new zed agent.Engine/fake",
		"bind binder",
	}, j.list(), "Wire in build order, agents in id order, then BindDeployment")
	v, _ := res.Value("binder")
	assert.Same(t, res, v.(*binder).got, "BindDeployment receives the *deploy.Result")
	assert.ErrorIs(t, res.Wire(context.Background()), fault.Conflict, "a result is wired once")
	require.NoError(t, res.Close())
}

func TestDeployClosesWhenWireFails(t *testing.T) {
	// REF 3.4.2
	t.Parallel()
	for name, tc := range map[string]struct {
		doc  string
		kind *fault.Kind
		want []string
	}{
		"a Wireable fails": {
			doc:  "version: v1\nresources:\n  a: {kind: test.Bus, impl: memory}\n  b: {kind: test.Wire, impl: fail}\n",
			kind: fault.NotAvailable,
			want: []string{"new a test.Bus/memory", "new b test.Wire/fail", "wire b", "close b", "close a"},
		},
		"an agent fails to bind": {
			doc: "version: v1\nresources:\n  a: {kind: test.Bus, impl: memory}\nagents:\n" +
				"  one: {card: {name: One}, engine: {kind: agent.Engine, impl: fake}}\n" +
				"  two: {card: {name: Two}, engine: {kind: agent.Engine, impl: fake}, referees: [{type: ok}, {type: wrong}]}\n",
			kind: fault.Validation,
			want: []string{
				"new a test.Bus/memory", "new one agent.Engine/fake",
				"new two agent.Engine/fake", "new two hook.referee/ok", "new two hook.referee/wrong",
				"close two", "close two", "close two", // BindAgent closes what it built
				"close a", "close one", // Deploy closes the result: resources, then agents
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j := &journal{}
			res, err := deploy.Deploy(context.Background(), mustParse(t, tc.doc), deploy.Options{Registry: testRegistry(j)})
			assert.Nil(t, res)
			assert.ErrorIs(t, err, tc.kind)
			assert.Equal(t, tc.want, j.list())
		})
	}
}

func TestResultAccessors(t *testing.T) {
	// REF 3.4.3
	t.Parallel()
	res, _ := deployText(t, wiredDoc)
	defer res.Close()
	assert.Equal(t, []string{"ahub", "binder", "bus", "nothing", "zhub"}, res.Names())
	assert.Equal(t, []string{"ahub", "binder", "bus", "nothing", "zhub"}, res.Order())
	v, ok := res.Value("bus")
	require.True(t, ok)
	assert.Equal(t, "bus", thingOf(v).name)
	_, ok = res.Value("missing")
	assert.False(t, ok)
	assert.Equal(t, []string{"amy", "zed"}, res.AgentNames())
	a, ok := res.Agent("amy")
	require.True(t, ok)
	assert.Equal(t, "amy", a.ID)
	assert.Equal(t, "Amy", a.Definition.Card.Name)
	assert.Len(t, a.Preparers, 1)
	assert.Len(t, a.Observers, 1)
	assert.Len(t, a.Referees, 1)
	assert.Len(t, a.Committers, 2)
	assert.Len(t, a.Closers, 6)
	_, ok = res.Agent("missing")
	assert.False(t, ok)
	assert.NotNil(t, res.Document())
	assert.Equal(t, "d.yaml", res.Document().File())
}

func TestResultClose(t *testing.T) {
	// REF 3.4.4
	// REF 3.6.7
	t.Parallel()
	res, j := deployText(t, wiredDoc)
	res.Detach("zhub", "no-such-resource")
	before := len(j.list())
	require.NoError(t, res.Close())
	assert.Equal(t, []string{
		"close bus", "close binder", "close ahub", // reverse build order; the typed nil and the detached zhub are skipped
		"close amy", "close amy", "close amy", "close amy", "close amy", "close amy", // then agents by id: amy's hooks, then engine
		"close zed",
	}, j.list()[before:])
	require.NoError(t, res.Close(), "Close is idempotent")
	assert.Len(t, j.list(), before+10, "a second Close closes nothing")
	v, _ := res.Value("zhub")
	assert.Zero(t, thingOf(v).closed, "a detached value stays open")
}

func TestResultCloseJoinsErrors(t *testing.T) {
	// REF 3.4.4
	t.Parallel()
	res, _ := deployText(t, "version: v1\nresources:\n  a: {kind: test.Bus, impl: memory}\n  b: {kind: test.Bus, impl: memory}\n  c: {kind: test.Bus, impl: memory}\n")
	errA, errC := errors.New("a failed"), errors.New("c failed")
	va, _ := res.Value("a")
	vc, _ := res.Value("c")
	thingOf(va).closeErr, thingOf(vc).closeErr = errA, errC
	err := res.Close()
	assert.ErrorIs(t, err, errA)
	assert.ErrorIs(t, err, errC)
	assert.EqualError(t, err, "close resource \"c\": c failed\nclose resource \"a\": a failed")
	vb, _ := res.Value("b")
	assert.Equal(t, 1, thingOf(vb).closed, "one failure does not stop the others")
	assert.Same(t, err, res.Close(), "a second Close returns the first result")
}

func TestBindAgent(t *testing.T) {
	// REF 3.4.5
	t.Parallel()
	res, j := deployText(t, wiredDoc)
	defer res.Close()
	db := &thing{name: "db", j: j}
	def := agent.Definition{
		Card:     agent.AgentCard{Name: "Dyn"},
		Engine:   agent.EngineRef{Kind: "agent.Engine", Impl: "fake", Deps: map[string]string{"bus": "bus", "db": "db"}, Settings: json.RawMessage(`{"note":"x"}`)},
		Referees: []agent.HookRef{{Type: "ok"}},
	}
	a, err := deploy.BindAgent(context.Background(), "dyn", def, res, deploy.Options{
		External: map[string]deploy.External{"db": {Contract: "db.Pool", Value: db}},
	})
	require.NoError(t, err)
	eng := a.Engine.(*engine)
	assert.Equal(t, "dyn", eng.name, "resource.Input.Name is the agent id")
	assert.Same(t, db, eng.deps["db"], "engines may use external dependencies")
	assert.JSONEq(t, `{"note":"x"}`, string(eng.settings))
	assert.Len(t, a.Referees, 1)
	assert.Equal(t, []string{"amy", "zed"}, res.AgentNames(), "BindAgent never writes the result's agents")
	_, ok := res.Agent("dyn")
	assert.False(t, ok)
	require.NoError(t, a.Close())
}

func TestBindAgentFailures(t *testing.T) {
	// REF 3.4.5
	// REF 3.3.4
	t.Parallel()
	res, _ := deployText(t, "version: v1\nresources:\n  bus: {kind: test.Bus, impl: memory}\n")
	defer res.Close()
	engineRef := agent.EngineRef{Kind: "agent.Engine", Impl: "fake"}
	card := agent.AgentCard{Name: "X"}
	cases := []struct {
		name   string
		def    agent.Definition
		msg    string
		closed int // values built and then closed by BindAgent
	}{
		{"invalid definition", agent.Definition{}, "card.name is required", 0},
		{"no engine factory", agent.Definition{Card: card, Engine: agent.EngineRef{Kind: "agent.Engine", Impl: "graph"}},
			"no factory for agent.Engine/graph", 0},
		{"engine is not an agent.Engine", agent.Definition{Card: card, Engine: agent.EngineRef{Kind: "agent.Engine", Impl: "notengine"}},
			"is not an agent.Engine", 1},
		{"undeclared engine dep", agent.Definition{Card: card, Engine: agent.EngineRef{Kind: "agent.Engine", Impl: "fake", Deps: map[string]string{"x": "bus"}}},
			`undeclared dep "x"`, 0},
		{"engine dep on an unbuilt resource", agent.Definition{Card: card, Engine: agent.EngineRef{Kind: "agent.Engine", Impl: "fake", Deps: map[string]string{"bus": "nope"}}},
			`references unbuilt resource "nope"`, 0},
		{"engine settings refused", agent.Definition{Card: card, Engine: agent.EngineRef{Kind: "agent.Engine", Impl: "fake", Settings: json.RawMessage(`{"x":1}`)}},
			`unknown field "x"`, 0},
		{"no hook factory", agent.Definition{Card: card, Engine: engineRef, Observe: []agent.HookRef{{Type: "missing"}}},
			"no factory for hook.observe/missing", 1},
		{"hook of the wrong interface", agent.Definition{Card: card, Engine: engineRef, Prepare: []agent.HookRef{{Type: "ok"}}, Referees: []agent.HookRef{{Type: "wrong"}}},
			"is not an agent.Referee", 3},
		{"hook looked up under its own slot", agent.Definition{Card: card, Commit: []agent.HookRef{{Type: "wrong"}}},
			"no factory for hook.commit/wrong", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := &journal{}
			a, err := deploy.BindAgent(context.Background(), "x", tc.def, res, deploy.Options{Registry: testRegistry(j)})
			assert.Nil(t, a)
			require.ErrorIs(t, err, fault.Validation, "every BindAgent failure is Validation")
			assert.ErrorContains(t, err, tc.msg)
			closes := 0
			for _, e := range j.list() {
				if e == "close x" {
					closes++
				}
			}
			assert.Equal(t, tc.closed, closes, "what was built is closed: %v", j.list())
		})
	}
	_, err := deploy.BindAgent(context.Background(), " ", agent.Definition{Card: card}, res, deploy.Options{})
	assert.ErrorIs(t, err, fault.Validation)
	_, err = deploy.BindAgent(context.Background(), "x", agent.Definition{Card: card}, nil, deploy.Options{})
	assert.ErrorIs(t, err, fault.Validation)
}

func TestBindAgentFactoryErrorIsValidation(t *testing.T) {
	// REF 3.4.5
	t.Parallel()
	res, _ := deployText(t, "version: v1\n")
	defer res.Close()
	reg := resource.NewRegistry()
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "agent.Engine", Impl: "e"}, func(context.Context, resource.Input) (any, error) {
		return nil, fault.New(fault.NotFound, "", "model not found")
	}))
	_, err := deploy.BindAgent(context.Background(), "x", agent.Definition{Card: agent.AgentCard{Name: "X"}, Engine: agent.EngineRef{Kind: "agent.Engine", Impl: "e"}},
		res, deploy.Options{Registry: reg})
	assert.Equal(t, fault.Validation, fault.KindOf(err))
	assert.ErrorIs(t, err, fault.NotFound, "the cause stays reachable")
	assert.EqualError(t, err, `agents.x.engine: bind agent "x": engine: model not found`)
}

func TestResultConcurrentReads(t *testing.T) {
	// REF 3.4.3
	t.Parallel()
	res, _ := deployText(t, wiredDoc)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				res.Value("bus")
				res.Agent("amy")
				res.AgentNames()
				res.Names()
				res.Detach("ahub")
			}
		})
	}
	wg.Go(func() { _ = res.Close() })
	wg.Wait()
	require.NoError(t, res.Close())
}
