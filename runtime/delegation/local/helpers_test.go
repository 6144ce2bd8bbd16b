package local_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/require"
)

// wait bounds every wait of these tests: generous, so that a slow machine
// does not fail them.
const wait = 30 * time.Second

// agents is an AgentSource the tests fill.
type agents struct {
	mu sync.Mutex
	m  map[string]*agent.Agent
}

func newAgents() *agents { return &agents{m: map[string]*agent.Agent{}} }

func (a *agents) Agent(id string) (*agent.Agent, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ag, ok := a.m[id]
	return ag, ok
}

func (a *agents) AgentNames() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.m))
	for id := range a.m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func (a *agents) put(id string, e agent.Engine) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.m[id] = &agent.Agent{ID: id, Definition: agent.Definition{Card: agent.AgentCard{Name: strings.ToUpper(id)}}, Engine: e}
}

// resumable makes an agenttest engine an agent.Resumer whose CanResume
// returns refuse.
type resumable struct {
	*agenttest.Engine
	refuse error
}

func (r resumable) CanResume(agent.Checkpoint) error { return r.refuse }

// env is a service over a set of agents, with or without a session
// manager.
type env struct {
	agents *agents
	dir    *local.Directory
	svc    *local.Service
	bus    *event.MemoryBus
	store  *checkpoint.Memory
	m      *session.Manager // nil in legacy mode
}

// envConfig configures newEnv.
type envConfig struct {
	settings local.ServiceSettings
	provider delegation.SessionProvider
	legacy   bool // no session manager
	resume   bool // the manager resumes parked runs from the store
}

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	e := &env{agents: newAgents(), bus: event.NewMemoryBus(), store: checkpoint.NewMemory()}
	t.Cleanup(func() { _ = e.bus.Close() })
	e.dir = local.NewDirectory(e.agents)
	svc, err := local.NewService(local.ServiceConfig{Directory: e.dir, Provider: cfg.provider, Settings: cfg.settings,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	e.svc = svc
	if cfg.legacy {
		return e
	}
	deps := session.Deps{Resolver: e.dir, HostFactory: e.factory(), Bus: e.bus}
	if cfg.resume {
		deps.Checkpoints, deps.Resume = e.store, true
	}
	m, err := session.NewManager(deps)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, svc.BindSessionManager(m))
	e.m = m
	return e
}

// factory is the turn host factory: the shape of the runtime's base host
// (bus, interrupts, prompts, checkpoints) offering the service at the
// depth of the ctx, as hostwrap.Wrap does.
func (e *env) factory() session.HostFactory {
	return func(ctx context.Context, req session.HostRequest) (agent.Host, error) {
		h := &agent.HostFuncs{
			Inner:        agent.NoopHost{},
			PublishFn:    e.bus.Publish,
			InterruptsFn: func() <-chan agent.Interrupt { return req.Interrupts },
			AskUserFn:    req.AskUser,
			CheckpointFn: e.store.Save,
		}
		return delegation.WithService(&busHost{HostFuncs: h, bus: e.bus},
			delegation.AtDepth(e.svc, delegation.DepthFromContext(ctx))), nil
	}
}

type busHost struct {
	*agent.HostFuncs
	bus event.Bus
}

func (h *busHost) EventBus() event.Bus { return h.bus }

// delegate runs a sync delegation of text to target and requires that it
// was accepted.
func (e *env) delegate(t testing.TB, ctx context.Context, target, text string) delegation.Response {
	t.Helper()
	resp, err := e.svc.Delegate(ctx, delegation.Request{Target: target, Input: message.NewTextMessage(message.RoleUser, text)})
	require.NoError(t, err)
	require.NoError(t, resp.Validate())
	return resp
}

func ask(target, text string) delegation.Request {
	return delegation.Request{Target: target, Input: message.NewTextMessage(message.RoleUser, text)}
}

func timeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// textSink collects the text of the deltas it is given; it is safe for
// concurrent OnDelta calls.
type textSink struct {
	mu    sync.Mutex
	texts []string
}

func (s *textSink) OnDelta(_ context.Context, _ event.Envelope, d event.StreamDeltaPayload) error {
	if d.Type == event.DeltaPart && d.Part != nil {
		s.mu.Lock()
		s.texts = append(s.texts, d.Part.Text)
		s.mu.Unlock()
	}
	return nil
}

func (s *textSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.texts, "")
}

// fixedProvider names one context id and says whether it is persistent.
type fixedProvider struct {
	id         string
	persistent bool
}

func (p fixedProvider) ContextID(context.Context, delegation.Request) (string, error) {
	return p.id, nil
}
func (p fixedProvider) Persistent() bool { return p.persistent }
