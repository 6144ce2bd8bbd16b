package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingHook is hook.prepare/failing: its New always fails.
func failingHook() resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: "hook.prepare", Impl: "failing"},
		func(context.Context, resource.Input) (any, error) { return nil, errors.New("hook refused") })
}

// badCloseEngine is agent.Engine/badclose: an engine whose Close fails.
type badCloseEngine struct{ agent.EngineFunc }

func (badCloseEngine) Close() error { return errors.New("engine close failed") }

func badCloseFactory() resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: "agent.Engine", Impl: "badclose"},
		func(context.Context, resource.Input) (any, error) {
			return badCloseEngine{EngineFunc: func(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
				return b, nil
			}}, nil
		})
}

// REF 1.11.1: ids, ctx and options are checked first.
// REF 1.11.2: the definition is validated before anything is built.
func TestRegistryArguments(t *testing.T) {
	l := newLab()
	rt, _ := buildLab(t, l, nil, labDoc("", ""))
	ctx := context.Background()
	good := labDef("QA", false)
	var nilCtx context.Context
	regs := []struct {
		name string
		call func() error
	}{
		{"nil ctx", func() error { _, err := rt.RegisterAgent(nilCtx, "qa", good); return err }},
		{"empty id", func() error { _, err := rt.RegisterAgent(ctx, "", good); return err }},
		{"leading space", func() error { _, err := rt.RegisterAgent(ctx, " qa", good); return err }},
		{"trailing space", func() error { _, err := rt.RegisterAgent(ctx, "qa\t", good); return err }},
		{"NUL inside", func() error { _, err := rt.RegisterAgent(ctx, "q\x00a", good); return err }},
		{"nil option", func() error { _, err := rt.RegisterAgent(ctx, "qa", good, nil); return err }},
		{"empty assembly", func() error { _, err := rt.RegisterAgent(ctx, "qa", good, runtime.WithToolAssembly("")); return err }},
		{"1.11.2 no card name", func() error { _, err := rt.RegisterAgent(ctx, "qa", agent.Definition{}); return err }},
		{"unregister nil ctx", func() error { return rt.UnregisterAgent(nilCtx, "qa") }},
		{"unregister empty id", func() error { return rt.UnregisterAgent(ctx, "") }},
		{"unregister spaced id", func() error { return rt.UnregisterAgent(ctx, " qa ") }},
		{"unregister nil option", func() error { return rt.UnregisterAgent(ctx, "qa", nil) }},
		{"zero timeout", func() error { return rt.UnregisterAgent(ctx, "qa", runtime.WithRemoveTimeout(0)) }},
		{"negative timeout", func() error { return rt.UnregisterAgent(ctx, "qa", runtime.WithRemoveTimeout(-time.Second)) }},
	}
	for _, tt := range regs {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.call(), fault.Validation)
		})
	}
	assert.Equal(t, []string{"bot"}, rt.AgentNames(), "nothing was registered")
	assert.Equal(t, 1, l.live(), "no engine was built for a refused call")
}

// REF 1.11.3
// REF 1.9.5
// REF 1.9.6
// Registry calls wait for the lifecycle
// lock that Drain holds; once draining, RegisterAgent is refused while
// UnregisterAgent still works; after Close both are NotAvailable.
func TestRegistrySerializedWithDrainAndClose(t *testing.T) {
	l, g := newLab(), newGate()
	rt, _ := buildLab(t, l, g, labDoc("", ""))
	ctx := context.Background()
	_, err := rt.RegisterAgent(ctx, "gated", labDef("Gated", true))
	require.NoError(t, err)
	lease, err := rt.Sessions().Open(ctx, session.Key{AgentID: "gated", ContextID: "c"})
	require.NoError(t, err)
	turn, err := lease.Session().Start(ctx, hello())
	require.NoError(t, err)
	<-g.reached

	dctx, cancel := context.WithCancel(ctx)
	drained := make(chan error, 1)
	go func() { drained <- rt.Drain(dctx) }()
	require.Eventually(t, rt.Sessions().Draining, 5*time.Second, time.Millisecond)
	registered := make(chan error, 1)
	go func() { _, err := rt.RegisterAgent(ctx, "qa", labDef("QA", false)); registered <- err }()
	select {
	case err := <-registered:
		t.Fatalf("RegisterAgent ran while Drain held the lifecycle lock: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	assert.ErrorIs(t, <-drained, context.Canceled)
	err = <-registered
	assert.ErrorIs(t, err, fault.NotAvailable, "1.9.6")
	assert.ErrorIs(t, err, runtime.ErrDraining)

	g.Open()
	_, err = turn.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Close())
	require.NoError(t, rt.UnregisterAgent(ctx, "gated"), "unregistering works while draining")

	require.NoError(t, rt.Close())
	_, err = rt.RegisterAgent(ctx, "qa", labDef("QA", false))
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.ErrorIs(t, rt.UnregisterAgent(ctx, "qa"), fault.NotAvailable)
	assert.Nil(t, rt.AgentNames())
	_, ok := rt.Agent("bot")
	assert.False(t, ok)
}

// REF 1.11.4: an id that is registered or deployed is a Conflict.
func TestRegisterAgentConflicts(t *testing.T) {
	rt, _ := buildLab(t, newLab(), nil, labDoc("", ""))
	ctx := context.Background()
	_, err := rt.RegisterAgent(ctx, "qa", labDef("QA", false))
	require.NoError(t, err)
	_, err = rt.RegisterAgent(ctx, "qa", labDef("QA", false))
	assert.ErrorIs(t, err, fault.Conflict)
	assert.ErrorContains(t, err, "already registered")
	_, err = rt.RegisterAgent(ctx, "bot", labDef("Bot", false))
	assert.ErrorIs(t, err, fault.Conflict)
	assert.ErrorContains(t, err, "is a deployed agent")
}

// REF 1.11.5: registration binds like deployment; any failure is
// Validation and closes what was built, so nothing is left registered.
func TestRegisterAgentNoPartialRegistration(t *testing.T) {
	l := newLab()
	rt, _ := buildLab(t, l, nil, labDoc("", ""), failingHook())
	ctx := context.Background()
	hooked := labDef("QA", false)
	hooked.Prepare = []agent.HookRef{{Type: "failing"}}
	unknown := labDef("QA", false)
	unknown.Engine.Impl = "nope"
	missingDep := labDef("QA", false)
	missingDep.Engine.Deps = map[string]string{"bus": "ghost"}
	for name, def := range map[string]agent.Definition{"hook fails": hooked, "unknown engine": unknown, "missing dep": missingDep} {
		t.Run(name, func(t *testing.T) {
			_, err := rt.RegisterAgent(ctx, "qa", def)
			assert.ErrorIs(t, err, fault.Validation)
			_, ok := rt.Agent("qa")
			assert.False(t, ok)
			assert.Equal(t, []string{"bot"}, rt.AgentNames())
			assert.Equal(t, 1, l.live(), "the engine built before the failure is closed")
			_, err = rt.Sessions().Open(ctx, session.Key{AgentID: "qa", ContextID: "c"})
			assert.ErrorIs(t, err, fault.NotFound)
		})
	}
}

// REF 1.11.6: the catalog rules; a failed check closes the instance.
func TestRegisterAgentCatalog(t *testing.T) {
	ctx := context.Background()
	withDefault := "  dynamic_catalog: {tools: {default: tools}}\n"
	noDefault := "  dynamic_catalog: {tools: {bot: tools}}\n"
	bogus := "\n  bogus: {kind: tool.Assembly, impl: bogus}"
	tests := []struct {
		name, note, catalog string
		opts                []runtime.RegisterAgentOption
		kind                *fault.Kind
		msg                 string
	}{
		{"assembly without catalog", "", "", []runtime.RegisterAgentOption{runtime.WithToolAssembly("tools")}, fault.Validation, "needs runtime.dynamic_catalog"},
		{"unknown resource", "", withDefault, []runtime.RegisterAgentOption{runtime.WithToolAssembly("nope")}, fault.NotFound, `"nope"`},
		{"not an assembly", bogus, withDefault, []runtime.RegisterAgentOption{runtime.WithToolAssembly("bogus")}, fault.Validation, "not a tool.Assembly"},
		{"no default, no option", "", noDefault, nil, fault.Validation, "needs WithToolAssembly"},
		{"default", "", withDefault, nil, nil, ""},
		{"named", "", noDefault, []runtime.RegisterAgentOption{runtime.WithToolAssembly("tools")}, nil, ""},
		{"no catalog, no option", "", "", nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLab()
			rt, _ := buildLab(t, l, nil, labDoc(tt.note, tt.catalog))
			_, err := rt.RegisterAgent(ctx, "qa", labDef("QA", false), tt.opts...)
			if tt.kind == nil {
				require.NoError(t, err)
				assert.Equal(t, []string{"bot", "qa"}, rt.AgentNames())
				return
			}
			assert.ErrorIs(t, err, tt.kind)
			assert.ErrorContains(t, err, tt.msg)
			assert.Equal(t, 1, l.live(), "the freshly built instance is closed")
			assert.Equal(t, []string{"bot"}, rt.AgentNames())
		})
	}
}

// REF 1.11.7: a registration clears the id's tombstone, serves
// sessions and publishes registered.
// REF 1.11.8: Agent and AgentNames are the live view, registered
// agents first, sorted and deduplicated.
// REF 1.11.13: lifecycle events go on the serving bus under the
// sanitised id with the card's name and description.
func TestRegisterAgent(t *testing.T) {
	l := newLab()
	rt, _ := buildLab(t, l, nil, labDoc("", ""))
	rec := attach(t, rt, event.PatternAgentLifecycle())
	ctx := context.Background()
	require.NoError(t, rt.Sessions().RemoveAgent(ctx, "team.qa"), "tombstone the id")
	_, err := rt.Sessions().Open(ctx, session.Key{AgentID: "team.qa", ContextID: "c"})
	require.ErrorIs(t, err, fault.NotFound)

	a, err := rt.RegisterAgent(ctx, "team.qa", labDef("QA", false))
	require.NoError(t, err)
	got, ok := rt.Agent("team.qa")
	require.True(t, ok)
	assert.Same(t, a, got)
	assert.Equal(t, "team.qa", a.ID)
	deployed, ok := rt.Agent("bot")
	require.True(t, ok)
	assert.Equal(t, "bot", deployed.ID)
	_, err = rt.RegisterAgent(ctx, "alpha", labDef("Alpha", false))
	require.NoError(t, err)
	assert.Equal(t, []string{"alpha", "bot", "team.qa"}, rt.AgentNames())

	lease, err := rt.Sessions().Open(ctx, session.Key{AgentID: "team.qa", ContextID: "c"})
	require.NoError(t, err, "the tombstone is cleared")
	defer lease.Close()
	turn, err := lease.Session().Start(ctx, hello())
	require.NoError(t, err)
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, res.Status)
	assert.Equal(t, a.Engine, l.engineFor(turn.RunID()), "the turn ran the registered instance")

	envs := rec.waitFor(t, 2)
	assert.Equal(t, "runtime.agent.team_qa.registered", envs[0].Subject)
	assert.Equal(t, event.SubjectAgentRegistered("alpha"), envs[1].Subject)
	var p event.AgentLifecyclePayload
	require.NoError(t, envs[0].Decode(&p))
	assert.Equal(t, event.AgentLifecyclePayload{AgentID: "team.qa", Name: "QA", Description: "registered QA"}, p)
	assert.Empty(t, l.problems())
}

// REF 1.11.9: unregistering an unknown id is a no-op, a deployed
// agent is a Conflict.
// REF 1.11.10: it waits for active turns to end on their own, then
// closes the agent's sessions.
// REF 1.11.12: then it closes the instance and publishes removed.
func TestUnregisterAgent(t *testing.T) {
	l, g := newLab(), newGate()
	rt, _ := buildLab(t, l, g, labDoc("", ""))
	rec := attach(t, rt, event.PatternAgentLifecycle())
	ctx := context.Background()
	require.NoError(t, rt.UnregisterAgent(ctx, "ghost"))
	err := rt.UnregisterAgent(ctx, "bot")
	assert.ErrorIs(t, err, fault.Conflict)
	assert.ErrorContains(t, err, "remove it from the deployment document")

	a, err := rt.RegisterAgent(ctx, "qa", labDef("QA", true))
	require.NoError(t, err)
	lease, err := rt.Sessions().Open(ctx, session.Key{AgentID: "qa", ContextID: "c"})
	require.NoError(t, err)
	turn, err := lease.Session().Start(ctx, hello())
	require.NoError(t, err)
	<-g.reached

	done := make(chan error, 1)
	go func() { done <- rt.UnregisterAgent(ctx, "qa") }()
	select {
	case err := <-done:
		t.Fatalf("UnregisterAgent returned while a turn was active: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	_, err = rt.Sessions().Open(ctx, session.Key{AgentID: "qa", ContextID: "other"})
	assert.ErrorIs(t, err, fault.NotFound, "new opens fail while it waits")
	g.Open()
	require.NoError(t, <-done)
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, res.Status, "the turn ended on its own")
	_, err = lease.Session().Start(ctx, hello())
	assert.ErrorIs(t, err, session.ErrSessionClosing, "the agent's sessions are closed")
	assert.True(t, a.Engine.(*labEngine).closed.Load(), "the instance is closed")
	_, ok := rt.Agent("qa")
	assert.False(t, ok)
	assert.Equal(t, []string{"bot"}, rt.AgentNames())
	envs := rec.waitFor(t, 2)
	assert.Equal(t, []string{event.SubjectAgentRegistered("qa"), event.SubjectAgentRemoved("qa")}, rec.subjects())
	var p event.AgentLifecyclePayload
	require.NoError(t, envs[1].Decode(&p))
	assert.Equal(t, "qa", p.AgentID)
	assert.Empty(t, l.problems())
}

// REF 1.11.11: when the wait fails the registration is restored, the
// sessions are untouched, the tombstone stays until a retry succeeds.
// REF 1.11.14: the registry drives Manager.RemoveAgent and
// Manager.ReopenAgent.
func TestUnregisterAgentRestoresOnTimeout(t *testing.T) {
	l, g := newLab(), newGate()
	rt, _ := buildLab(t, l, g, labDoc("", ""))
	rec := attach(t, rt, event.PatternAgentLifecycle())
	ctx := context.Background()
	a, err := rt.RegisterAgent(ctx, "qa", labDef("QA", true))
	require.NoError(t, err)
	lease, err := rt.Sessions().Open(ctx, session.Key{AgentID: "qa", ContextID: "c"})
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().Start(ctx, hello())
	require.NoError(t, err)
	<-g.reached

	err = rt.UnregisterAgent(ctx, "qa", runtime.WithRemoveTimeout(20*time.Millisecond))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	got, ok := rt.Agent("qa")
	require.True(t, ok, "the registration is restored")
	assert.Same(t, a, got)
	assert.Equal(t, []string{"bot", "qa"}, rt.AgentNames())
	assert.Equal(t, session.TurnRunning, turn.State(), "the turn is untouched")
	assert.False(t, a.Engine.(*labEngine).closed.Load())
	_, err = rt.Sessions().Open(ctx, session.Key{AgentID: "qa", ContextID: "other"})
	assert.ErrorIs(t, err, fault.NotFound, "the tombstone stays")
	_, err = rt.RegisterAgent(ctx, "qa", labDef("QA", false))
	assert.ErrorIs(t, err, fault.Conflict, "it is still registered")

	g.Open()
	_, err = turn.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, rt.UnregisterAgent(ctx, "qa"), "a retry succeeds")
	assert.True(t, a.Engine.(*labEngine).closed.Load())
	rec.waitFor(t, 2)
	assert.Equal(t, []string{event.SubjectAgentRegistered("qa"), event.SubjectAgentRemoved("qa")}, rec.subjects())

	_, err = rt.RegisterAgent(ctx, "qa", labDef("QA", false))
	require.NoError(t, err, "the id can be registered again")
	l2, err := rt.Sessions().Open(ctx, session.Key{AgentID: "qa", ContextID: "other"})
	require.NoError(t, err, "ReopenAgent cleared the tombstone")
	require.NoError(t, l2.Close())
}

// REF 1.11.12: a close error is returned, nothing is published, and
// the agent stays unregistered.
func TestUnregisterAgentCloseError(t *testing.T) {
	rt, _ := buildLab(t, newLab(), nil, labDoc("", ""), badCloseFactory())
	rec := attach(t, rt, event.PatternAgentLifecycle())
	ctx := context.Background()
	def := labDef("QA", false)
	def.Engine = agent.EngineRef{Kind: "agent.Engine", Impl: "badclose"}
	_, err := rt.RegisterAgent(ctx, "qa", def)
	require.NoError(t, err)
	rec.waitFor(t, 1)
	err = rt.UnregisterAgent(ctx, "qa")
	assert.ErrorContains(t, err, "engine close failed")
	_, ok := rt.Agent("qa")
	assert.False(t, ok)
	require.NoError(t, rt.UnregisterAgent(ctx, "qa"), "already gone: a no-op")
	// Events of one bus arrive in order: once the next registration's event
	// is in, a removed event for qa would be too.
	_, err = rt.RegisterAgent(ctx, "next", labDef("Next", false))
	require.NoError(t, err)
	rec.waitFor(t, 2)
	assert.Equal(t, []string{event.SubjectAgentRegistered("qa"), event.SubjectAgentRegistered("next")}, rec.subjects())
}

// REF 1.4.2: Close closes the registered agents with the serving
// generation.
func TestCloseClosesRegisteredAgents(t *testing.T) {
	l := newLab()
	rt, _ := buildLab(t, l, nil, labDoc("", ""))
	a, err := rt.RegisterAgent(context.Background(), "qa", labDef("QA", false))
	require.NoError(t, err)
	require.NoError(t, rt.Close())
	assert.True(t, a.Engine.(*labEngine).closed.Load())
	assert.Equal(t, 0, l.live())
	assert.Empty(t, l.problems())
}

// REF 1.11.6
// REF 1.11.7
// The registered agent's sessions get the tool
// assembly it was registered with; deployed agents get theirs from the
// catalog.
func TestRegisteredAgentToolCatalog(t *testing.T) {
	l := newLab()
	rt, _ := buildLab(t, l, nil, labDoc("\n  tools2: {kind: tool.Assembly, impl: test}", "  dynamic_catalog: {tools: {default: tools}}\n"))
	ctx := context.Background()
	_, err := rt.RegisterAgent(ctx, "qa", labDef("QA", false), runtime.WithToolAssembly("tools2"))
	require.NoError(t, err)
	run := func(id string) string {
		lease, err := rt.Sessions().Open(ctx, session.Key{AgentID: id, ContextID: "c"})
		require.NoError(t, err)
		defer lease.Close()
		turn, err := lease.Session().Start(ctx, hello())
		require.NoError(t, err)
		_, err = turn.Wait(ctx)
		require.NoError(t, err)
		return turn.RunID()
	}
	tools, _ := rt.Resource("tools")
	tools2, _ := rt.Resource("tools2")
	assert.Same(t, tools2, l.catalogOf(run("qa")))
	assert.Same(t, tools, l.catalogOf(run("bot")))
}
