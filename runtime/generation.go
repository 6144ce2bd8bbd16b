package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/runtime/tool"
)

// generation is one built deployment with its resolved runtime roles and
// the dynamically registered agents it serves. It owns result and those
// agents, and closes them.
type generation struct {
	id          uint64
	doc         *deploy.Document
	hash        string // doc.Hash(), to recognise an unchanged document
	cfg         Config
	result      *deploy.Result
	bus         event.Bus
	store       agent.CheckpointStore // nil when checkpointing is off
	hostFactory session.HostFactory
	tools       map[string]tool.Assembly // dynamic_catalog.tools resolved; nil without a catalog

	mu      sync.RWMutex
	dynamic map[string]*dynAgent // live while serving, frozen once retired

	closeOnce sync.Once
	closeErr  error
}

var _ session.AgentResolver = (*generation)(nil)

// close closes the result (resources in reverse build order, then the
// deployed agents) and then the dynamic agents the generation adopted,
// sorted by id (REF 1.4.3). It is idempotent.
func (g *generation) close() error {
	if g == nil || g.result == nil {
		return nil
	}
	g.closeOnce.Do(func() {
		errs := []error{g.result.Close()}
		g.mu.Lock()
		dyn := g.dynamic
		g.dynamic = nil
		g.mu.Unlock()
		for _, id := range sortedKeys(dyn) {
			if err := dyn[id].inst.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close agent %q: %w", id, err))
			}
		}
		g.closeErr = errors.Join(errs...)
	})
	return g.closeErr
}

// Agent resolves id among the dynamic agents first, then the deployed ones.
func (g *generation) Agent(id string) (*agent.Agent, bool) {
	if e, ok := g.dynamicAgent(id); ok {
		return e.inst, true
	}
	return g.result.Agent(id)
}

// AgentNames lists the dynamic and the deployed agents, sorted and
// deduplicated.
func (g *generation) AgentNames() []string {
	g.mu.RLock()
	names := slices.Collect(maps.Keys(g.dynamic))
	g.mu.RUnlock()
	names = append(names, g.result.AgentNames()...)
	slices.Sort(names)
	return slices.Compact(names)
}

func (g *generation) dynamicAgent(id string) (*dynAgent, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	e, ok := g.dynamic[id]
	return e, ok
}

func (g *generation) putDynamic(e *dynAgent) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dynamic == nil {
		g.dynamic = map[string]*dynAgent{}
	}
	g.dynamic[e.id] = e
}

func (g *generation) removeDynamic(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.dynamic, id)
}

// dynamicIDs returns the ids of the dynamic agents, sorted.
func (g *generation) dynamicIDs() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return sortedKeys(g.dynamic)
}

// resolveRoles finds the event bus and the checkpoint store
// (REF 1.2.3, 1.2.4, 1.2.6).
func (g *generation) resolveRoles() error {
	v, ok := g.result.Value(g.cfg.EventBus)
	if !ok {
		return configErr("runtime.event_bus", fault.NotFound, "event_bus %q is not a resource of the deployment", g.cfg.EventBus)
	}
	bus, isBus := v.(event.Bus)
	if !isBus || agent.IsNil(bus) {
		return configErr("runtime.event_bus", fault.Validation, "event_bus %q is a %T, not an event.Bus", g.cfg.EventBus, v)
	}
	g.bus = bus
	if g.cfg.CheckpointStore == "" {
		return nil
	}
	v, ok = g.result.Value(g.cfg.CheckpointStore)
	if !ok {
		return configErr("runtime.checkpoint_store", fault.NotFound,
			"checkpoint_store %q is not a resource of the deployment", g.cfg.CheckpointStore)
	}
	store, isStore := v.(agent.CheckpointStore)
	if !isStore || agent.IsNil(store) {
		return configErr("runtime.checkpoint_store", fault.Validation,
			"checkpoint_store %q is a %T, not an agent.CheckpointStore", g.cfg.CheckpointStore, v)
	}
	if _, deletes := store.(agent.CheckpointDeleter); g.cfg.Sessions.Resume && !deletes {
		return configErr("runtime.checkpoint_store", fault.Validation,
			"sessions.resume requires checkpoint_store %q to implement agent.CheckpointDeleter", g.cfg.CheckpointStore)
	}
	g.store = store
	return nil
}

// checkCatalog applies the dynamic_catalog rules that need the deployment
// and resolves the assemblies (REF 1.2.9–1.2.11).
func (g *generation) checkCatalog() error {
	cat := g.cfg.DynamicCatalog
	if cat == nil {
		return nil
	}
	g.tools = make(map[string]tool.Assembly, len(cat.Tools))
	for _, k := range sortedKeys(cat.Tools) {
		path := "runtime.dynamic_catalog.tools." + k
		if k != DefaultAgentKey {
			if _, ok := g.result.Agent(k); !ok {
				return configErr(path, fault.Validation, "%q: no such deployed agent", k)
			}
		}
		asm, err := g.assembly(cat.Tools[k])
		if err != nil {
			return &ConfigError{Path: path, Err: err}
		}
		g.tools[k] = asm
	}
	if _, ok := cat.Tools[DefaultAgentKey]; !ok {
		for _, id := range g.result.AgentNames() {
			if _, mapped := cat.Tools[id]; !mapped {
				return configErr("runtime.dynamic_catalog.tools", fault.Validation,
					"agent %q has no tool assembly and there is no default", id)
			}
		}
	}
	return nil
}

// assembly resolves the resource name as a tool.Assembly: an unknown name
// is NotFound, another value Validation (REF 1.2.11, 1.11.6).
func (g *generation) assembly(name string) (tool.Assembly, error) {
	v, ok := g.result.Value(name)
	if !ok {
		return nil, fault.New(fault.NotFound, "", "tool assembly %q is not a resource of the deployment", name)
	}
	asm, isAsm := v.(tool.Assembly)
	if !isAsm || agent.IsNil(v) {
		return nil, fault.New(fault.Validation, "", "resource %q is a %T, not a %s", name, v, tool.Kind)
	}
	return asm, nil
}

// catalogFor resolves the tool assembly of the agent id registered at run
// time (REF 1.11.6, 1.10.3.8): the named resource when name is set,
// otherwise the catalog's default, otherwise none when the document has no
// catalog.
func (g *generation) catalogFor(id, name string) (tool.Assembly, error) {
	op := fmt.Sprintf("agent %q", id)
	if g.cfg.DynamicCatalog == nil {
		if name != "" {
			return nil, fault.New(fault.Validation, op, "WithToolAssembly(%q) needs runtime.dynamic_catalog in the document", name)
		}
		return nil, nil
	}
	if name == "" {
		asm, ok := g.tools[DefaultAgentKey]
		if !ok {
			return nil, fault.New(fault.Validation, op, "runtime.dynamic_catalog has no default; the agent needs WithToolAssembly")
		}
		return asm, nil
	}
	asm, err := g.assembly(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return asm, nil
}

// sessionCatalog is the session.CatalogProvider of the generation: the
// agent's tool.Assembly, or nil when it has none.
func (g *generation) sessionCatalog(_ context.Context, key session.Key) (any, error) {
	if e, ok := g.dynamicAgent(key.AgentID); ok {
		if e.tools == nil {
			return nil, nil
		}
		return e.tools, nil
	}
	if asm, ok := g.tools[key.AgentID]; ok {
		return asm, nil
	}
	if asm, ok := g.tools[DefaultAgentKey]; ok {
		return asm, nil
	}
	return nil, nil
}

// hostFactoryFor builds the generation's host factory: the base factory,
// then WithHostFactory, then WithResultHostFactory with this generation's
// result (REF 1.3.5, 1.3.7, 1.12.2–1.12.4).
func (rt *Runtime) hostFactoryFor(g *generation) (session.HostFactory, error) {
	f := baseHostFactory(g.bus, g.store)
	if rt.hostDecorator != nil {
		next, err := rt.hostDecorator(f)
		if err != nil {
			return nil, fmt.Errorf("build runtime: host factory decorator: %w", err)
		}
		if next == nil {
			return nil, fault.New(fault.Internal, "build runtime", "host factory decorator returned nil")
		}
		f = next
	}
	if rt.resultDecorate != nil {
		next, err := rt.resultDecorate(g.result, f)
		if err != nil {
			return nil, fmt.Errorf("build runtime: result host factory decorator: %w", err)
		}
		if next == nil {
			return nil, fault.New(fault.Internal, "build runtime", "result host factory decorator returned nil")
		}
		f = next
	}
	return f, nil
}

// baseHost is the host every turn starts from (REF 1.12.1). Besides
// the Host methods it offers the event bus, the wall clock (UTC), a random
// source seeded from the run id, and a log sink.
type baseHost struct {
	bus    event.Bus
	store  agent.CheckpointStore
	req    session.HostRequest
	logger *slog.Logger

	mu  sync.Mutex
	rnd *rand.Rand
}

var (
	_ agent.Host             = (*baseHost)(nil)
	_ agent.InterruptClock   = (*baseHost)(nil)
	_ agent.EventBusProvider = (*baseHost)(nil)
	_ agent.Clock            = (*baseHost)(nil)
	_ agent.RandomSource     = (*baseHost)(nil)
	_ agent.LogSink          = (*baseHost)(nil)
)

func baseHostFactory(bus event.Bus, store agent.CheckpointStore) session.HostFactory {
	return func(ctx context.Context, req session.HostRequest) (agent.Host, error) {
		if err := req.Validate(); err != nil {
			return nil, err
		}
		seed := sha256.Sum256([]byte(req.RunID))
		src := rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:16]))
		return &baseHost{bus: bus, store: store, req: req, rnd: rand.New(src),
			logger: slog.Default().With("run_id", req.RunID, "agent_id", req.Key.AgentID)}, nil
	}
}

// Now reads the wall clock in UTC.
func (h *baseHost) Now() time.Time { return time.Now().UTC() }

// Random returns the next number of the run's seeded sequence.
func (h *baseHost) Random() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rnd.Float64()
}

// Log writes a script's log line to the process logger.
func (h *baseHost) Log(ctx context.Context, level, msg string, attrs map[string]any) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	args := make([]any, 0, 2*len(attrs))
	for _, k := range sortedKeys(attrs) {
		args = append(args, k, attrs[k])
	}
	h.logger.Log(ctx, l, msg, args...)
}

func (h *baseHost) Publish(ctx context.Context, env event.Envelope) error {
	return h.bus.Publish(ctx, env)
}

func (h *baseHost) Interrupts() <-chan agent.Interrupt { return h.req.Interrupts }

// InterruptSent says when the turn was interrupted (agent.InterruptClock).
func (h *baseHost) InterruptSent() (time.Time, bool) {
	if h.req.InterruptSent == nil {
		return time.Time{}, false
	}
	return h.req.InterruptSent()
}

func (h *baseHost) AskUser(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error) {
	return h.req.AskUser(ctx, p)
}

func (h *baseHost) Checkpoint(ctx context.Context, cp agent.Checkpoint) error {
	if h.store == nil {
		return nil
	}
	return h.store.Save(ctx, cp)
}

func (h *baseHost) ReportUsage(context.Context, agent.Usage) error { return nil }

func (h *baseHost) EventBus() event.Bus { return h.bus }

// sessionDeps is the generation as a session epoch.
func (g *generation) sessionDeps() session.Deps {
	d := session.Deps{
		Resolver:    g,
		HostFactory: g.hostFactory,
		Bus:         g.bus,
		Checkpoints: g.store,
		Resume:      g.cfg.Sessions.Resume,
		Epoch:       g.id,
	}
	if g.tools != nil {
		d.CatalogProvider = g.sessionCatalog
	}
	if p, ok := g.bus.(session.OwnershipProvider); ok { // a bus shared by several nodes
		d.Ownership = p.SessionOwnership()
	}
	return d
}
