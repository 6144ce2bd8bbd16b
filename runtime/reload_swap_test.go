package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func count(names []string, name string) int {
	n := 0
	for _, s := range names {
		if s == name {
			n++
		}
	}
	return n
}

// REF 1.10.4: the commit swaps everything at once; the retiring
// generation adopts the registered instances and is closed, bus removed,
// when its last in-flight turn ends.
// REF 1.10.5: in-flight turns finish on the generation they started
// on; the next Start uses the new one.
// REF 1.6.2: after a Reload Resource lends the new generation's
// value; the old one is closed once the old turns finish.
func TestReloadInFlightTurnsKeepTheirGeneration(t *testing.T) {
	l, g := newLab(), newGate()
	gated := strings.Replace(labDoc("", ""), "deps: {bus: events}}", "deps: {bus: events}, settings: {gate: true}}", 1)
	rt, log := buildLab(t, l, g, gated)
	ctx := context.Background()
	qa1, err := rt.RegisterAgent(ctx, "qa", labDef("QA", false))
	require.NoError(t, err)
	oldNote, _ := rt.Resource("note")
	old, _ := rt.Agent("bot")

	lease, err := rt.Sessions().Open(ctx, botKey)
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().Start(ctx, hello())
	require.NoError(t, err)
	<-g.reached
	runs := attach(t, rt, event.PatternRun(turn.RunID()))

	res, err := rt.Reload(ctx, parse(t, labDoc("", "")))
	require.NoError(t, err)
	assert.Equal(t, []string{"qa"}, res.ReboundAgents)
	newNote, ok := rt.Resource("note")
	require.True(t, ok)
	assert.NotSame(t, oldNote, newNote, "1.6.2: Resource lends the new value")
	qa2, _ := rt.Agent("qa")
	assert.NotSame(t, qa1, qa2, "the registered agent is bound again")
	assert.Zero(t, count(log.get(), "note"), "the old generation stays open while its turn runs")
	assert.False(t, old.Engine.(*labEngine).closed.Load())
	assert.False(t, qa1.Engine.(*labEngine).closed.Load(), "the old generation adopted the old instance")

	// The next Start uses the new generation.
	other, err := rt.Sessions().Open(ctx, session.Key{AgentID: "bot", ContextID: "other"})
	require.NoError(t, err)
	defer other.Close()
	next, err := other.Session().Start(ctx, hello())
	require.NoError(t, err)
	_, err = next.Wait(ctx)
	require.NoError(t, err)
	cur, _ := rt.Agent("bot")
	assert.Equal(t, cur.Engine, l.engineFor(next.RunID()))

	g.Open()
	out, err := turn.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, out.Status)
	assert.Equal(t, old.Engine, l.engineFor(turn.RunID()), "the in-flight turn finished on its generation")
	assert.Equal(t, 1, count(log.get(), "note"), "the old generation is closed once its turn ended")
	assert.True(t, old.Engine.(*labEngine).closed.Load())
	assert.True(t, qa1.Engine.(*labEngine).closed.Load(), "adopted instances close with it")
	assert.False(t, qa2.Engine.(*labEngine).closed.Load())
	assert.False(t, cur.Engine.(*labEngine).closed.Load())
	// The old bus stayed routed until the end: the probe the old turn
	// published on it reached the attachment.
	assert.Contains(t, subjectsOf(runs.waitFor(t, 1)), "agent.run."+turn.RunID()+".custom.probe")
	assert.Empty(t, l.problems())

	require.NoError(t, rt.Close())
	assert.Equal(t, 2, count(log.get(), "note"))
	assert.Equal(t, 0, l.live())
}

// REF 1.10.6: each generation owns its bus and store, so a document
// may change both.
func TestReloadChangesBusAndStore(t *testing.T) {
	l := newLab()
	rt, _ := buildLab(t, l, nil, labDoc("\n  store: {kind: test.Store, impl: plain}", "  checkpoint_store: store\n"))
	rec := attach(t, rt, event.PatternAllRuns())
	ctx := context.Background()
	oldBus, _ := rt.Resource("events")
	_, err := rt.Reload(ctx, parse(t, `version: v1
resources:
  bus2: {kind: event.Bus, impl: memory}
  store2: {kind: test.Store, impl: deleting}
agents:
  bot:
    card: {name: Bot}
    engine: {kind: agent.Engine, impl: lab, deps: {bus: bus2}}
runtime:
  event_bus: bus2
  checkpoint_store: store2
  sessions: {resume: true}
`))
	require.NoError(t, err)
	_, ok := rt.Resource("events")
	assert.False(t, ok)
	newBus, ok := rt.Resource("bus2")
	require.True(t, ok)
	assert.NotSame(t, oldBus, newBus)
	assert.True(t, rt.Config().Sessions.Resume)
	lease, err := rt.Sessions().Open(ctx, botKey)
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().Start(ctx, hello())
	require.NoError(t, err)
	_, err = turn.Wait(ctx)
	require.NoError(t, err)
	// The host of the turn published on bus2 (the lab engine checks it), and
	// the runtime's attachment saw it.
	assert.Contains(t, subjectsOf(rec.waitFor(t, 1)), "agent.run."+turn.RunID()+".custom.probe")
	assert.Empty(t, l.problems())
}

// flakyBus refuses to publish the runtime's own events.
type flakyBus struct{ *event.MemoryBus }

func (b *flakyBus) Publish(ctx context.Context, env event.Envelope) error {
	if strings.HasPrefix(env.Subject, "runtime.") {
		return errors.New("publish refused")
	}
	return b.MemoryBus.Publish(ctx, env)
}

// REF 1.10.8: rebuild events are best-effort; a publish failure does
// not change the result.
// REF 1.11.13: so are the lifecycle events.
func TestRuntimeEventsAreBestEffort(t *testing.T) {
	flaky := resource.FactoryFunc(resource.Spec{Kind: "event.Bus", Impl: "flaky"},
		func(context.Context, resource.Input) (any, error) { return &flakyBus{event.NewMemoryBus()}, nil })
	src := strings.Replace(labDoc("", ""), "impl: memory", "impl: flaky", 1)
	rt, _ := buildLab(t, newLab(), nil, src, flaky)
	ctx := context.Background()
	_, err := rt.RegisterAgent(ctx, "qa", labDef("QA", false))
	require.NoError(t, err)
	res, err := rt.Reload(ctx, parse(t, src+"  sessions: {max_sessions: 4}\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.GenerationID)
	require.NoError(t, rt.UnregisterAgent(ctx, "qa"))
	assert.False(t, slices.Contains(rt.AgentNames(), "qa"))
}

// REF 1.10.3.3: the session manager is bound into each new
// generation once, and the binder's generation is the one that serves.
func TestReloadBindsTheSessionManager(t *testing.T) {
	var binds atomic.Int32
	src := labDoc("\n  binder: {kind: test.Binder}", "")
	rt, _ := buildLab(t, newLab(), nil, src, binderFactory(&binds))
	assert.Equal(t, int32(1), binds.Load())
	old, _ := rt.Resource("binder")
	_, err := rt.Reload(context.Background(), parse(t, src+"  sessions: {max_sessions: 8}\n"))
	require.NoError(t, err)
	assert.Equal(t, int32(2), binds.Load(), "the new generation's binder was bound once")
	cur, _ := rt.Resource("binder")
	assert.NotSame(t, old, cur)
}

// REF 1.4.3
// REF 1.10.4
// Close interrupts a turn that still runs on a
// retired generation; that generation is closed when the turn ends, and
// nothing is left behind.
func TestCloseWithARetiredGeneration(t *testing.T) {
	before := goroutines()
	l, g := newLab(), newGate()
	gated := strings.Replace(labDoc("", ""), "deps: {bus: events}}", "deps: {bus: events}, settings: {gate: true}}", 1)
	rt, log := buildLab(t, l, g, gated)
	ctx := context.Background()
	lease, err := rt.Sessions().Open(ctx, botKey)
	require.NoError(t, err)
	turn, err := lease.Session().Start(ctx, hello())
	require.NoError(t, err)
	<-g.reached
	_, err = rt.Reload(ctx, parse(t, labDoc("", "")))
	require.NoError(t, err)
	assert.Zero(t, count(log.get(), "note"))

	require.NoError(t, rt.Close())
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.StatusInterrupted, res.Status)
	assert.Equal(t, 2, count(log.get(), "note"), "both generations are closed")
	assert.Equal(t, 0, l.live())
	assert.Empty(t, l.problems())
	noLeak(t, before)
}
