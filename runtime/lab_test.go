package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/require"
)

// lab watches the engines of every generation: which engine ran which run,
// and whether an engine or its bus was closed while a run used it.
type lab struct {
	serial atomic.Int64
	hold   chan struct{} // closed: engines return at once; nil: they pause briefly

	mu         sync.Mutex
	engines    []*labEngine
	runs       map[string]*labEngine // run id → the engine that ran it
	catalogs   map[string]any        // run id → the session's tool catalog
	violations []string
}

func newLab() *lab { return &lab{runs: map[string]*labEngine{}, catalogs: map[string]any{}} }

// catalogOf returns the tool catalog the run saw.
func (l *lab) catalogOf(run string) any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.catalogs[run]
}

func (l *lab) violate(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
}

func (l *lab) problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.violations...)
}

// engineFor returns the engine that ran run, if any.
func (l *lab) engineFor(run string) *labEngine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[run]
}

// live returns how many engines are not closed.
func (l *lab) live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.engines {
		if !e.closed.Load() {
			n++
		}
	}
	return n
}

// labEngine is an agent.Engine bound to one generation's bus. Its run
// checks that the turn's host belongs to the same generation and that
// neither the engine nor the bus is closed while the run lasts.
type labEngine struct {
	lab    *lab
	serial int64
	agent  string
	bus    event.Bus
	gate   *gate
	closed atomic.Bool
}

// gate optionally holds runs until it is opened.
type gate struct {
	reached chan struct{}
	open    chan struct{}
	once    sync.Once
	onceR   sync.Once
}

func newGate() *gate { return &gate{reached: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) Open() { g.once.Do(func() { close(g.open) }) }

func (e *labEngine) Close() error {
	if e.closed.Swap(true) {
		e.lab.violate("engine %d of %q closed twice", e.serial, e.agent)
	}
	return nil
}

func (e *labEngine) Execute(ctx context.Context, run agent.Run, host agent.Host, board *agent.Board) (*agent.Board, error) {
	e.check(run, "start")
	e.lab.mu.Lock()
	if prev := e.lab.runs[run.ID]; prev != nil {
		e.lab.violations = append(e.lab.violations, fmt.Sprintf("run %s ran on engines %d and %d", run.ID, prev.serial, e.serial))
	}
	e.lab.runs[run.ID] = e
	if ch, ok := agent.CapabilityFromHost[session.CatalogHost](host); ok {
		e.lab.catalogs[run.ID] = ch.SessionCatalog()
	}
	e.lab.mu.Unlock()
	if hb, ok := agent.EventBusFromHost(host); !ok || hb != e.bus {
		e.lab.violate("run %s: the host's bus is not the engine's generation's bus", run.ID)
	}
	var err error
	switch {
	case e.gate != nil:
		e.gate.onceR.Do(func() { close(e.gate.reached) })
		select {
		case <-e.gate.open:
		case intr := <-host.Interrupts():
			err = agent.Interrupted(intr)
		case <-ctx.Done():
			err = ctx.Err()
		}
	case e.lab.hold == nil:
		select {
		case <-time.After(time.Duration(run.ID[len(run.ID)-1]%4) * time.Millisecond):
		case intr := <-host.Interrupts():
			err = agent.Interrupted(intr)
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	env, perr := event.NewEnvelope(ctx, "agent.run."+event.SanitiseID(run.ID)+".custom.probe", nil)
	if perr == nil {
		perr = host.Publish(context.WithoutCancel(ctx), env)
	}
	if perr != nil {
		e.lab.violate("run %s: publish at the end failed: %v", run.ID, perr)
	}
	e.check(run, "end")
	return board, err
}

func (e *labEngine) check(run agent.Run, when string) {
	if e.closed.Load() {
		e.lab.violate("run %s: engine %d of %q closed at %s", run.ID, e.serial, e.agent, when)
	}
}

// labFactory is agent.Engine/lab: a labEngine with dep "bus" (event.Bus).
// Setting "gate": true holds every run at g until it opens.
func labFactory(l *lab, g *gate) resource.Factory {
	spec := resource.Spec{Kind: "agent.Engine", Impl: "lab", Deps: []resource.DepSpec{{Name: "bus", Type: "event.Bus", Required: true}}}
	return resource.FactoryFunc(spec, func(_ context.Context, in resource.Input) (any, error) {
		var s struct {
			Gate bool `json:"gate"`
		}
		if err := resource.DecodeSettings(in.Settings, &s); err != nil {
			return nil, err
		}
		bus, ok := in.Deps["bus"].(event.Bus)
		if !ok {
			return nil, errors.New("lab engine: bus dep is not an event.Bus")
		}
		e := &labEngine{lab: l, serial: l.serial.Add(1), agent: in.Name, bus: bus}
		if s.Gate {
			e.gate = g
		}
		l.mu.Lock()
		l.engines = append(l.engines, e)
		l.mu.Unlock()
		return e, nil
	})
}

// labDoc is a deployment with agent "bot" on the lab engine; extra is
// added to the runtime: section and note to the resources.
func labDoc(note, extra string) string {
	return `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  tools: {kind: tool.Assembly, impl: test}
  note: {kind: test.Thing, settings: {}}` + note + `
agents:
  bot:
    card: {name: Bot}
    engine: {kind: agent.Engine, impl: lab, deps: {bus: events}}
runtime:
  event_bus: events
` + extra
}

// labDef is the definition of a registered agent on the lab engine.
func labDef(name string, gated bool) agent.Definition {
	settings := `{}`
	if gated {
		settings = `{"gate": true}`
	}
	return agent.Definition{Card: agent.AgentCard{Name: name, Description: "registered " + name},
		Engine: agent.EngineRef{Kind: "agent.Engine", Impl: "lab", Deps: map[string]string{"bus": "events"}, Settings: []byte(settings)}}
}

// buildLab builds src with the lab engine and the test factories.
func buildLab(t *testing.T, l *lab, g *gate, src string, extra ...resource.Factory) (*runtime.Runtime, *closeLog) {
	t.Helper()
	log := &closeLog{}
	reg := testRegistry(t, log)
	reg.MustRegister(labFactory(l, g))
	reg.MustRegister(extra...)
	rt, err := runtime.NewBuilder(reg).Build(context.Background(), parse(t, src))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt, log
}

// recorder keeps the envelopes an attachment receives.
type recorder struct {
	mu   sync.Mutex
	envs []event.Envelope
}

func (r *recorder) OnEvent(_ context.Context, env event.Envelope) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.envs = append(r.envs, env)
	return nil
}

func (r *recorder) subjects() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.envs))
	for i, e := range r.envs {
		out[i] = e.Subject
	}
	return out
}

// waitFor waits until the recorder holds n envelopes and returns them.
func (r *recorder) waitFor(t *testing.T, n int) []event.Envelope {
	t.Helper()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.envs) >= n
	}, 5*time.Second, time.Millisecond, "want %d events", n)
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Envelope(nil), r.envs...)
}

// attach records pattern on rt with a blocking attachment, so that no
// event is dropped.
func attach(t *testing.T, rt *runtime.Runtime, pattern string) *recorder {
	t.Helper()
	r := &recorder{}
	detach, err := rt.Attach(context.Background(), pattern, r, event.WithAttachBackpressure(event.Block))
	require.NoError(t, err)
	t.Cleanup(detach)
	return r
}
