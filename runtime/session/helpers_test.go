package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/require"
)

// patience bounds every wait of these tests. It is generous on purpose:
// waits end as soon as their condition holds.
const patience = 10 * time.Second

// botID is the agent most tests talk to.
const botID = "bot"

func key(contextID string) session.Key { return session.Key{AgentID: botID, ContextID: contextID} }

func userMsg(text string) message.Message { return message.NewTextMessage(message.RoleUser, text) }

func ask(text string) agent.Request { return agent.Request{Message: userMsg(text)} }

// agents is the test resolver: a map of agent id to agent.
type agents struct {
	mu sync.Mutex
	m  map[string]*agent.Agent
}

var _ session.AgentResolver = (*agents)(nil)

func newAgents() *agents { return &agents{m: map[string]*agent.Agent{}} }

func (a *agents) Agent(id string) (*agent.Agent, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ag, ok := a.m[id]
	return ag, ok
}

func (a *agents) put(id string, e agent.Engine) *agent.Agent {
	ag := &agent.Agent{ID: id, Engine: e}
	a.mu.Lock()
	a.m[id] = ag
	a.mu.Unlock()
	return ag
}

func (a *agents) putAgent(ag *agent.Agent) {
	a.mu.Lock()
	a.m[ag.ID] = ag
	a.mu.Unlock()
}

func (a *agents) drop(id string) {
	a.mu.Lock()
	delete(a.m, id)
	a.mu.Unlock()
}

// resumable makes an agenttest engine an agent.Resumer whose CanResume
// returns refuse.
type resumable struct {
	*agenttest.Engine
	refuse error
}

var _ agent.Resumer = resumable{}

func (r resumable) CanResume(agent.Checkpoint) error { return r.refuse }

// testHost is the base host of these tests, the shape of the runtime's:
// publish to the bus, the turn's interrupts and prompts, checkpoints to
// the store (dropped without one), usage accepted, and the EventBus
// capability.
type testHost struct {
	bus   event.Bus
	store agent.CheckpointStore
	req   session.HostRequest
}

var (
	_ agent.Host             = (*testHost)(nil)
	_ agent.EventBusProvider = (*testHost)(nil)
)

func (h *testHost) Publish(ctx context.Context, env event.Envelope) error {
	return h.bus.Publish(ctx, env)
}
func (h *testHost) Interrupts() <-chan agent.Interrupt { return h.req.Interrupts }
func (h *testHost) AskUser(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error) {
	return h.req.AskUser(ctx, p)
}
func (h *testHost) Checkpoint(ctx context.Context, cp agent.Checkpoint) error {
	if h.store == nil {
		return nil
	}
	return h.store.Save(ctx, cp)
}
func (h *testHost) ReportUsage(context.Context, agent.Usage) error { return nil }
func (h *testHost) EventBus() event.Bus                            { return h.bus }

// env is a manager over a memory bus, a test resolver and a recording
// host factory.
type env struct {
	t      testing.TB
	bus    *event.MemoryBus
	store  agent.CheckpointStore // nil: no store
	agents *agents
	m      *session.Manager

	mu       sync.Mutex
	requests []session.HostRequest
	products []agent.Host
	decorate func(req session.HostRequest, base agent.Host) (agent.Host, error)
}

// newEnv returns a manager without a checkpoint store whose agent botID
// runs eng. The manager and the bus close when the test ends.
func newEnv(t testing.TB, eng agent.Engine) *env {
	t.Helper()
	return newEnvConfig(t, eng, session.Config{})
}

// newEnvConfig is newEnv with a manager configured by cfg.
func newEnvConfig(t testing.TB, eng agent.Engine, cfg session.Config) *env {
	t.Helper()
	return buildEnv(t, nil, false, eng, nil, cfg)
}

// newDurableEnv is newEnv with a workspace checkpoint store in a fresh
// directory and resume on.
func newDurableEnv(t testing.TB, eng agent.Engine) *env {
	t.Helper()
	return newDurableEnvConfig(t, eng, session.Config{})
}

// newDurableEnvConfig is newDurableEnv with a manager configured by cfg.
func newDurableEnvConfig(t testing.TB, eng agent.Engine, cfg session.Config) *env {
	t.Helper()
	return buildEnv(t, workspaceStore(t, t.TempDir()), true, eng, nil, cfg)
}

func workspaceStore(t testing.TB, dir string) *checkpoint.Store {
	t.Helper()
	ws, err := workspace.NewLocal(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	st, err := checkpoint.NewStore(ws, "")
	require.NoError(t, err)
	return st
}

// newEnvWith is newEnv with the checkpoint store and resume setting of the
// first epoch.
func newEnvWith(t testing.TB, store agent.CheckpointStore, resume bool, eng agent.Engine) *env {
	t.Helper()
	return buildEnv(t, store, resume, eng, nil, session.Config{})
}

// newCatalogEnv is newEnv whose first epoch has the tool catalog provider
// catalog.
func newCatalogEnv(t testing.TB, eng agent.Engine, catalog session.CatalogProvider) *env {
	t.Helper()
	return buildEnv(t, nil, false, eng, catalog, session.Config{})
}

func buildEnv(t testing.TB, store agent.CheckpointStore, resume bool, eng agent.Engine, catalog session.CatalogProvider, cfg session.Config) *env {
	t.Helper()
	e := &env{t: t, bus: event.NewMemoryBus(), store: store, agents: newAgents()}
	if eng != nil {
		e.agents.put(botID, eng)
	}
	deps := e.deps(store, resume)
	deps.CatalogProvider = catalog
	m, err := session.NewManagerWithConfig(deps, cfg)
	require.NoError(t, err)
	e.m = m
	t.Cleanup(func() {
		_ = m.Close()
		_ = e.bus.Close()
	})
	return e
}

// deps returns the dependencies of an epoch over e's bus and resolver.
func (e *env) deps(store agent.CheckpointStore, resume bool) session.Deps {
	return session.Deps{Resolver: e.agents, HostFactory: e.factory(store), Bus: e.bus, Checkpoints: store, Resume: resume}
}

// factory returns a host factory that records each request and builds a
// testHost over store, decorated by e.decorate when set.
func (e *env) factory(store agent.CheckpointStore) session.HostFactory {
	return func(_ context.Context, req session.HostRequest) (agent.Host, error) {
		if err := req.Validate(); err != nil {
			return nil, err
		}
		var h agent.Host = &testHost{bus: e.bus, store: store, req: req}
		e.mu.Lock()
		e.requests = append(e.requests, req)
		dec := e.decorate
		e.mu.Unlock()
		if dec != nil {
			var err error
			if h, err = dec(req, h); err != nil {
				return nil, err
			}
		}
		e.mu.Lock()
		e.products = append(e.products, h)
		e.mu.Unlock()
		return h, nil
	}
}

func (e *env) setDecorate(fn func(req session.HostRequest, base agent.Host) (agent.Host, error)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.decorate = fn
}

func (e *env) hostRequests() []session.HostRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.requests)
}

func (e *env) lastProduct() agent.Host {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.products) == 0 {
		return nil
	}
	return e.products[len(e.products)-1]
}

// open opens a lease on k; it is closed when the test ends.
func (e *env) open(k session.Key) *session.Lease {
	e.t.Helper()
	l, err := e.m.Open(context.Background(), k)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = l.Close() })
	return l
}

// start opens key(contextID) and starts a turn asking text.
func (e *env) start(contextID, text string) *session.Turn {
	e.t.Helper()
	return e.startConfig(contextID, text, session.StartConfig{})
}

// startConfig is start with cfg.
func (e *env) startConfig(contextID, text string, cfg session.StartConfig) *session.Turn {
	e.t.Helper()
	tr, err := e.open(key(contextID)).Session().StartWithConfig(context.Background(), ask(text), cfg)
	require.NoError(e.t, err)
	return tr
}

// storeIDs lists the ids the env's store holds.
func (e *env) storeIDs() []string {
	e.t.Helper()
	ids, err := e.store.(agent.CheckpointLister).List(context.Background())
	require.NoError(e.t, err)
	return ids
}

// settle waits for tr with patience and returns its result.
func settle(t testing.TB, tr *session.Turn) *agent.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	res, err := tr.Wait(ctx)
	require.NoError(t, err)
	require.NotNil(t, res)
	return res
}

// reached waits until g is reached.
func reached(t testing.TB, g *agenttest.Gate) {
	t.Helper()
	select {
	case <-g.Reached():
	case <-time.After(patience):
		t.Fatal("the engine never reached the gate")
	}
}

// within fails the test unless ch closes within patience.
func within(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(patience):
		t.Fatalf("%s did not happen within %s", what, patience)
	}
}

// eventually polls cond until it holds.
func eventually(t testing.TB, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, patience, 2*time.Millisecond, what)
}

// isKind asserts that err is of kind k.
func isKind(t testing.TB, err error, k *fault.Kind) {
	t.Helper()
	require.Error(t, err)
	require.Truef(t, errors.Is(err, k), "want kind %s, got %v (kind %s)", k, err, fault.KindOf(err))
}

// busLog records every envelope that matches a pattern, in bus order.
type busLog struct {
	mu   sync.Mutex
	envs []event.Envelope
	n    atomic.Int64
}

func recordBus(t testing.TB, bus event.Bus, pattern string) *busLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := bus.Subscribe(ctx, pattern, event.SubConfig{BufferSize: 4096, Backpressure: event.Block})
	require.NoError(t, err)
	l := &busLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for env := range sub.C() {
			l.mu.Lock()
			l.envs = append(l.envs, env)
			l.mu.Unlock()
			l.n.Add(1)
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = sub.Close()
		<-done
	})
	return l
}

func (l *busLog) all() []event.Envelope {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.envs)
}

// await waits until n envelopes satisfying keep were recorded and
// returns them.
func (l *busLog) await(t testing.TB, n int, keep func(event.Envelope) bool) []event.Envelope {
	t.Helper()
	var out []event.Envelope
	eventually(t, func() bool {
		out = out[:0]
		for _, env := range l.all() {
			if keep == nil || keep(env) {
				out = append(out, env)
			}
		}
		return len(out) >= n
	}, "envelopes on the bus")
	return out
}

func subjectIs(s string) func(event.Envelope) bool {
	return func(env event.Envelope) bool { return env.Subject == s }
}

func decode[T any](t testing.TB, env event.Envelope) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(env.Payload, &v))
	return v
}

// textSink collects the text deltas it is given.
type textSink struct {
	mu    sync.Mutex
	texts []string
	envs  []event.Envelope
}

func (s *textSink) OnDelta(_ context.Context, env event.Envelope, d event.StreamDeltaPayload) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.envs = append(s.envs, env)
	if d.Part != nil && d.Part.Type == message.PartText {
		s.texts = append(s.texts, d.Part.Text)
	}
	return nil
}

func (s *textSink) text() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.texts)
}

func (s *textSink) subjects() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.envs))
	for i, env := range s.envs {
		out[i] = env.Subject
	}
	return out
}

// observerLog records observer callbacks as "started", "finished",
// "closing" and "closed", with the session's context id.
type observerLog struct {
	mu     sync.Mutex
	events []string
}

func (o *observerLog) add(ev string) {
	o.mu.Lock()
	o.events = append(o.events, ev)
	o.mu.Unlock()
}

func (o *observerLog) observer(tag string) session.SessionObserver {
	return session.ObserverFuncs{
		Started: func(s *session.Session, _ *session.Turn) { o.add(tag + "started " + s.Key().ContextID) },
		Closing: func(s *session.Session) { o.add(tag + "closing " + s.Key().ContextID) },
		Closed:  func(s *session.Session, _ error) { o.add(tag + "closed " + s.Key().ContextID) },
		TurnFinished: func(s *session.Session, _ *session.Turn, _ *agent.Result, _ error) {
			o.add(tag + "finished " + s.Key().ContextID)
		},
	}
}

func (o *observerLog) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events)
}

func (o *observerLog) count(ev string) int {
	n := 0
	for _, e := range o.all() {
		if e == ev {
			n++
		}
	}
	return n
}

// stubborn is a step that ignores interrupts and its ctx: it returns only
// once release is closed.
func stubborn(release <-chan struct{}, started chan<- struct{}) agenttest.Step {
	return agenttest.Func(func(context.Context, *agenttest.Env) error {
		if started != nil {
			close(started)
		}
		<-release
		return nil
	})
}

// goroutineBaseline returns a check that waits until the goroutine count
// is back to what it is now and prints every stack when it is not.
func goroutineBaseline(t testing.TB) func() {
	base := runtime.NumGoroutine()
	return func() {
		t.Helper()
		deadline := time.Now().Add(patience)
		for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > base {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines left behind (baseline %d):\n%s", n-base, base, buf[:runtime.Stack(buf, true)])
		}
	}
}
