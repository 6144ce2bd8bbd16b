package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 1.3.9: the first generation has id 1, and the decoded config is
// the serving one.
func TestBuildFirstGeneration(t *testing.T) {
	rt, _ := build(t, minimalDoc)
	assert.Equal(t, uint64(1), rt.GenerationID())
	assert.Equal(t, "events", rt.Config().EventBus)
	v, ok := rt.Resource("events")
	require.True(t, ok)
	assert.Implements(t, (*event.Bus)(nil), v)
}

// REF 1.3.1, 1.3.5: every factory the document references must be in
// the registry; a missing one fails Build with the place named.
func TestBuildNeedsEveryFactory(t *testing.T) {
	err, _ := buildErr(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  cps: {kind: checkpoint.Store, impl: nowhere}
runtime:
  event_bus: events
`)
	assert.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "checkpoint.Store/nowhere")
	assert.Contains(t, err.Error(), "deploy.yaml:4")
}

// REF 1.3.2: a builder is used once.
func TestBuilderUsedOnce(t *testing.T) {
	b := runtime.NewBuilder(testRegistry(t, nil))
	rt, err := b.Build(context.Background(), parse(t, minimalDoc))
	require.NoError(t, err)
	defer rt.Close()
	_, err = b.Build(context.Background(), parse(t, minimalDoc))
	assert.ErrorIs(t, err, runtime.ErrBuilderUsed)
	assert.ErrorIs(t, err, fault.Conflict)
	f := func(session.HostFactory) (session.HostFactory, error) { return nil, nil }
	assert.ErrorIs(t, b.WithHostFactory(f), runtime.ErrBuilderUsed)
	assert.ErrorIs(t, b.WithResultHostFactory(func(*deploy.Result, session.HostFactory) (session.HostFactory, error) { return nil, nil }), runtime.ErrBuilderUsed)
	assert.ErrorIs(t, b.WithExternalResource(runtime.ExternalResource{ExternalDependency: runtime.ExternalDependency{Name: "x", Contract: "c"}, Value: 1}), runtime.ErrBuilderUsed)
	assert.ErrorIs(t, b.WithLoader(deploy.NewLoader(deploy.LoaderConfig{})), runtime.ErrBuilderUsed)

	// A failed Build uses the builder up too.
	b2 := runtime.NewBuilder(testRegistry(t, nil))
	_, err = b2.Build(context.Background(), nil)
	require.ErrorIs(t, err, fault.Validation)
	_, err = b2.Build(context.Background(), parse(t, minimalDoc))
	assert.ErrorIs(t, err, runtime.ErrBuilderUsed)
}

// REF 1.3.3: the decorators and the loader reject nil and a second
// setting.
func TestBuilderSettersRejectNilAndTwice(t *testing.T) {
	b := runtime.NewBuilder(testRegistry(t, nil))
	hf := func(f session.HostFactory) (session.HostFactory, error) { return f, nil }
	rf := func(_ *deploy.Result, f session.HostFactory) (session.HostFactory, error) { return f, nil }
	l := deploy.NewLoader(deploy.LoaderConfig{})

	assert.ErrorIs(t, b.WithHostFactory(nil), fault.Validation)
	require.NoError(t, b.WithHostFactory(hf))
	err := b.WithHostFactory(hf)
	assert.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "already set")

	assert.ErrorIs(t, b.WithResultHostFactory(nil), fault.Validation)
	require.NoError(t, b.WithResultHostFactory(rf))
	assert.ErrorIs(t, b.WithResultHostFactory(rf), fault.Validation)

	assert.ErrorIs(t, b.WithLoader(nil), fault.Validation)
	require.NoError(t, b.WithLoader(l))
	assert.ErrorIs(t, b.WithLoader(l), fault.Validation)
}

// REF 1.3.5: nil ctx and nil registry are Validation errors.
func TestBuildRejectsNilInputs(t *testing.T) {
	//lint:ignore SA1012 the nil ctx is the point of the test
	_, err := runtime.NewBuilder(testRegistry(t, nil)).Build(nil, parse(t, minimalDoc)) //nolint:staticcheck
	assert.ErrorIs(t, err, fault.Validation)
	_, err = runtime.NewBuilder(nil).Build(context.Background(), parse(t, minimalDoc))
	assert.ErrorIs(t, err, fault.Validation)
}

// REF 1.2.3: event_bus must name a built event.Bus.
func TestBuildResolvesEventBus(t *testing.T) {
	tests := []struct {
		name, doc string
		kind      *fault.Kind
		msg       string
	}{
		{"missing resource", `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
runtime:
  event_bus: evts
`, fault.NotFound, `deploy.yaml:5: runtime.event_bus: event_bus "evts" is not a resource`},
		{"not a bus", `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  other: {kind: test.Thing}
runtime:
  event_bus: other
`, fault.Validation, `not an event.Bus`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err, _ := buildErr(t, tt.doc)
			assert.ErrorIs(t, err, tt.kind)
			assert.Contains(t, err.Error(), tt.msg)
			var de *deploy.Error
			assert.ErrorAs(t, err, &de)
		})
	}
}

// REF 1.2.4, 1.2.6, 1.8.3: checkpoint_store must resolve to a store;
// with resume it must also delete.
func TestBuildResolvesCheckpointStore(t *testing.T) {
	base := `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  plain: {kind: test.Store, impl: plain}
  deleting: {kind: test.Store, impl: deleting}
  typednil: {kind: test.Store, impl: typednil}
  other: {kind: test.Thing}
runtime:
  event_bus: events
`
	tests := []struct {
		name, runtime string
		kind          *fault.Kind
		msg           string
	}{
		{"1.2.4 missing", "  checkpoint_store: nope\n", fault.NotFound, `checkpoint_store "nope" is not a resource`},
		{"1.2.4 not a store", "  checkpoint_store: other\n", fault.Validation, "not an agent.CheckpointStore"},
		{"1.2.4 typed nil", "  checkpoint_store: typednil\n", fault.Validation, "not an agent.CheckpointStore"},
		{"1.2.6 resume without deleter", "  checkpoint_store: plain\n  sessions: {resume: true}\n", fault.Validation, "agent.CheckpointDeleter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err, _ := buildErr(t, base+tt.runtime)
			assert.ErrorIs(t, err, tt.kind)
			assert.Contains(t, err.Error(), tt.msg)
			assert.Contains(t, err.Error(), "runtime.checkpoint_store")
		})
	}
	for _, ok := range []string{"  checkpoint_store: plain\n", "  checkpoint_store: deleting\n  sessions: {resume: true}\n"} {
		rt, _ := build(t, base+ok)
		assert.True(t, rt.Config().CheckpointStore != "")
	}
}

// REF 1.3.6: a failure after resources are built closes them, in
// reverse build order, and nothing is left open.
func TestBuildFailureClosesWhatWasBuilt(t *testing.T) {
	err, log := buildErr(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  a: {kind: test.Thing}
  b: {kind: test.Thing, deps: {dep: a}}
runtime:
  event_bus: b
`)
	assert.ErrorIs(t, err, fault.Validation)
	assert.Equal(t, []string{"b", "a"}, log.get())
}

// REF 1.3.7, 1.12.2, 1.12.3: decorators run in order, WithResultHostFactory
// sees the deployment, a nil product is Internal and an error fails Build
// wrapped.
func TestBuildHostDecorators(t *testing.T) {
	var order []string
	var seen *deploy.Result
	rt, _ := build(t, minimalDoc, func(b *runtime.Builder) {
		require.NoError(t, b.WithHostFactory(func(f session.HostFactory) (session.HostFactory, error) {
			order = append(order, "host")
			return func(ctx context.Context, req session.HostRequest) (agent.Host, error) {
				h, err := f(ctx, req)
				if err != nil {
					return nil, err
				}
				return &agent.HostFuncs{Inner: h, ReportUsageFn: func(context.Context, agent.Usage) error {
					return fault.New(fault.BudgetExceeded, "usage", "over budget")
				}}, nil
			}, nil
		}))
		require.NoError(t, b.WithResultHostFactory(func(r *deploy.Result, f session.HostFactory) (session.HostFactory, error) {
			order = append(order, "result")
			seen = r
			return f, nil
		}))
	})
	assert.Equal(t, []string{"host", "result"}, order)
	require.NotNil(t, seen)
	_, ok := seen.Value("events")
	assert.True(t, ok, "the result decorator sees the deployment")

	h := newHost(t, rt)
	assert.ErrorIs(t, h.ReportUsage(context.Background(), agent.Usage{}), fault.BudgetExceeded, "the decorator's method is used")
	_, ok = agent.EventBusFromHost(h)
	assert.True(t, ok, "capabilities of the base host stay reachable through the decorator")

	boom := errors.New("boom")
	err, _ := buildErr(t, minimalDoc, func(b *runtime.Builder) {
		require.NoError(t, b.WithHostFactory(func(session.HostFactory) (session.HostFactory, error) { return nil, boom }))
	})
	assert.ErrorIs(t, err, boom)
	err, _ = buildErr(t, minimalDoc, func(b *runtime.Builder) {
		require.NoError(t, b.WithResultHostFactory(func(*deploy.Result, session.HostFactory) (session.HostFactory, error) { return nil, nil }))
	})
	assert.ErrorIs(t, err, fault.Internal)
	err, _ = buildErr(t, minimalDoc, func(b *runtime.Builder) {
		require.NoError(t, b.WithHostFactory(func(session.HostFactory) (session.HostFactory, error) { return nil, nil }))
	})
	assert.ErrorIs(t, err, fault.Internal)
}

func newHost(t *testing.T, rt *runtime.Runtime) agent.Host {
	t.Helper()
	intr := make(chan agent.Interrupt, 1)
	h, err := runtime.HostFactoryOf(rt)(context.Background(), session.HostRequest{
		Key: session.Key{AgentID: "a", ContextID: "c"}, RunID: "run-0000000000000001", Interrupts: intr,
		AskUser: func(context.Context, agent.UserPrompt) (agent.UserReply, error) {
			return agent.UserReply{}, nil
		},
	})
	require.NoError(t, err)
	return h
}

// REF 1.12.1, 1.8.2: the base host publishes to the generation's bus,
// exposes the bus capability, and checkpoints to the store or drops them
// when there is none.
func TestBaseHost(t *testing.T) {
	rt, _ := build(t, minimalDoc)
	h := newHost(t, rt)
	bus, ok := agent.EventBusFromHost(h)
	require.True(t, ok)
	v, _ := rt.Resource("events")
	assert.Same(t, v, bus)

	sub, err := bus.Subscribe(context.Background(), "agent.run.>", event.SubConfig{})
	require.NoError(t, err)
	defer sub.Close()
	require.NoError(t, h.Publish(context.Background(), event.Envelope{Subject: "agent.run.r1.start"}))
	got := <-sub.C()
	assert.Equal(t, "agent.run.r1.start", got.Subject)
	assert.NotEmpty(t, got.ID)

	cp := agent.Checkpoint{ExecID: "run-1", Board: agent.NewBoard()}
	assert.NoError(t, h.Checkpoint(context.Background(), cp), "1.8.2: without a store checkpointing is a no-op")
	assert.NoError(t, h.ReportUsage(context.Background(), agent.Usage{TotalTokens: 3}))
	assert.NotNil(t, h.Interrupts())

	rt2, _ := build(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  cps: {kind: test.Store, impl: deleting}
runtime:
  event_bus: events
  checkpoint_store: cps
`)
	h2 := newHost(t, rt2)
	require.NoError(t, h2.Checkpoint(context.Background(), cp))
	store, _ := rt2.Resource("cps")
	loaded, err := store.(agent.CheckpointStore).Load(context.Background(), "run-1")
	require.NoError(t, err)
	require.NotNil(t, loaded, "with a store the host saves to it")

	_, err = runtime.HostFactoryOf(rt)(context.Background(), session.HostRequest{})
	assert.ErrorIs(t, err, fault.Validation, "1.12.1: every host request field is required")
}

// REF 1.2.9, 1.2.10, 1.2.11: the dynamic catalog names deployed agents
// (or default), covers every agent, and names existing resources that are
// tool assemblies.
func TestBuildDynamicCatalog(t *testing.T) {
	base := `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  tools: {kind: tool.Assembly, impl: test}
  bogus: {kind: tool.Assembly, impl: bogus}
agents:
  qa:
    card: {name: QA}
    engine: {kind: agent.Engine, impl: echo}
  writer:
    card: {name: Writer}
    engine: {kind: agent.Engine, impl: echo}
runtime:
  event_bus: events
  dynamic_catalog:
    tools:
`
	tests := []struct {
		name, tools string
		kind        *fault.Kind
		msg         string
	}{
		{"1.2.9 unknown agent key", "      qa: tools\n      writer: tools\n      ghost: tools\n", fault.Validation, `"ghost": no such deployed agent`},
		{"1.2.10 uncovered agent", "      qa: tools\n", fault.Validation, `agent "writer" has no tool assembly and there is no default`},
		{"1.2.11 missing resource", "      default: nope\n", fault.NotFound, `tool assembly "nope"`},
		{"1.2.11 not an assembly", "      default: tools\n      qa: bogus\n", fault.Validation, `resource "bogus" is a *runtime_test.thing, not a tool.Assembly`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err, _ := buildErr(t, base+tt.tools)
			assert.ErrorIs(t, err, tt.kind)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
	rt, _ := build(t, base+"      default: tools\n      qa: tools\n")
	assert.Equal(t, "tools", rt.Config().DynamicCatalog.Tools["default"], "1.2.11: one resource may back several agents")
}

// REF 1.2.12, 1.7.7: runtime roles never name external dependencies.
func TestRuntimeRolesRefuseExternals(t *testing.T) {
	inject := func(b *runtime.Builder) {
		require.NoError(t, b.WithExternalResource(runtime.ExternalResource{
			ExternalDependency: runtime.ExternalDependency{Name: "ext", Contract: "event.Bus"}, Value: event.NewMemoryBus()}))
	}
	for _, role := range []string{"  event_bus: ext\n", "  event_bus: events\n  checkpoint_store: ext\n",
		"  event_bus: events\n  dynamic_catalog: {tools: {default: ext}}\n"} {
		err, _ := buildErr(t, `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
runtime:
  external_deps: [{name: ext, contract: event.Bus}]
`+role, inject)
		assert.ErrorIs(t, err, fault.Validation)
		assert.Contains(t, err.Error(), `"ext" is an external dependency`)
	}
}

// REF 1.12.1: the base host also offers the clock, a random source
// seeded from the run id (the same run id gives the same sequence) and a log
// sink, as capabilities.
func TestBaseHostSources(t *testing.T) {
	rt, _ := build(t, minimalDoc)
	h1, h2 := newHost(t, rt), newHost(t, rt)
	clock, ok := agent.CapabilityFromHost[agent.Clock](h1)
	require.True(t, ok)
	assert.Equal(t, time.UTC, clock.Now().Location())
	r1, ok := agent.CapabilityFromHost[agent.RandomSource](h1)
	require.True(t, ok)
	r2, _ := agent.CapabilityFromHost[agent.RandomSource](h2)
	for range 5 {
		v := r1.Random()
		assert.Equal(t, v, r2.Random(), "same run id, same sequence")
		assert.GreaterOrEqual(t, v, 0.0)
		assert.Less(t, v, 1.0)
	}
	logger, ok := agent.CapabilityFromHost[agent.LogSink](h1)
	require.True(t, ok)
	logger.Log(context.Background(), "warn", "from a script", map[string]any{"n": 1})
}

// REF 1.1, 1.2.7: a bad key of runtime.sessions fails Build with a
// document error that names the file, the line of the key and its path,
// decoded by the same strict decoder as the rest of the document; a value
// fed by ${env:NAME} is placed the same way.
func TestBuildPlacesSessionTunableErrors(t *testing.T) {
	t.Setenv("CORRAL_TEST_SINK_BUFFER", "many")
	const head = "version: v1\nresources:\n  events: {kind: event.Bus, impl: memory}\nruntime:\n  event_bus: events\n  sessions:\n    resume: false\n"
	tests := []struct {
		name, line, want string
	}{
		{"out of bounds", "    sink_buffer: 0\n",
			`deploy.yaml:8: runtime.sessions.sink_buffer: sink_buffer must be in [1, 1048576], got 0`},
		{"not positive", "    max_sessions: -3\n",
			`deploy.yaml:8: runtime.sessions.max_sessions: max_sessions must be > 0, got -3`},
		{"not an integer", "    delivery_concurrency: lots\n",
			`deploy.yaml:8: runtime.sessions.delivery_concurrency: want an integer, got the scalar "lots"`},
		{"env that is not an integer", "    sink_buffer: ${env:CORRAL_TEST_SINK_BUFFER}\n",
			`deploy.yaml:8: runtime.sessions.sink_buffer: want an integer, got the scalar "many"`},
		{"not a duration", "    sink_buffer: 16\n    idle_timeout: soon\n",
			`deploy.yaml:9: runtime.sessions.idle_timeout: want a Go duration such as 90s or 10m, got the scalar "soon"`},
		{"zero duration", "    sink_buffer: 16\n    idle_timeout: 0s\n",
			`deploy.yaml:9: runtime.sessions.idle_timeout: idle_timeout "0s" must be a Go duration greater than 0`},
		{"unknown key", "    sink_buffer: 16\n    sink_bufer: 3\n",
			`deploy.yaml:9: runtime.sessions: unknown field "sink_bufer"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err, _ := buildErr(t, head+tt.line)
			assert.ErrorIs(t, err, fault.Validation)
			var de *deploy.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tt.want, err.Error())
		})
	}
	rt, _ := build(t, head+"    idle_timeout: ' 90s '\n    sink_buffer: \"16\"\n")
	tun := session.DefaultTunables()
	tun.IdleTimeout, tun.SinkBuffer = 90*time.Second, 16
	assert.Equal(t, tun, rt.Sessions().Tunables(), "the keys left out keep session.DefaultTunables")
}

// Tenants are declared in runtime.tenants with their quotas; an agent that
// names an undeclared tenant, a negative quota and an unknown quota key
// are Validation errors at their own line; a declared tenant's quota holds
// for its agents.
func TestBuildTenants(t *testing.T) {
	doc := func(tenant, quotas string) string {
		return "version: v1\nresources:\n  events: {kind: event.Bus, impl: memory}\nagents:\n  bot:\n" +
			"    tenant: " + tenant + "\n    card: {name: Bot}\n    engine: {kind: agent.Engine, impl: lab, deps: {bus: events}}\n" +
			"runtime:\n  event_bus: events\n  tenants:\n    acme:\n" + quotas
	}
	tests := []struct {
		name, src, want string
	}{
		{"undeclared tenant", doc("bravo", "      sessions: 1\n"),
			`deploy.yaml:6: agents.bot.tenant: tenant "bravo" is not declared in runtime.tenants (declared: acme)`},
		{"negative quota", doc("acme", "      sessions: -1\n"),
			`deploy.yaml:13: runtime.tenants.acme.sessions: sessions must be >= 0, got -1`},
		{"unknown quota", doc("acme", "      session: 1\n"),
			`deploy.yaml:13: runtime.tenants.acme: unknown field "session"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err, _ := buildErr(t, tt.src)
			assert.ErrorIs(t, err, fault.Validation)
			assert.Equal(t, tt.want, err.Error())
		})
	}
	rt, _ := buildLab(t, newLab(), nil, doc("acme", "      sessions: 1\n"))
	lease, err := rt.Sessions().Open(context.Background(), session.Key{AgentID: "bot", ContextID: "c1"})
	require.NoError(t, err)
	defer lease.Close()
	_, err = rt.Sessions().Open(context.Background(), session.Key{AgentID: "bot", ContextID: "c2"})
	assert.ErrorIs(t, err, fault.BudgetExceeded)
	assert.ErrorContains(t, err, `tenant "acme": quota sessions of 1 reached`)
}
