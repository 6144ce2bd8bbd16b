package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
)

// ErrBuilderUsed is returned by a second Build, and by any With* call once
// Build has started (REF 1.3.2).
var ErrBuilderUsed = fault.New(fault.Conflict, "runtime builder", "builder already used")

// HostDecorator wraps the base host factory (Builder.WithHostFactory). It
// must pass through every host method it does not replace.
type HostDecorator func(session.HostFactory) (session.HostFactory, error)

// ResultHostDecorator wraps the host factory a second time with access to
// the assembled deployment (Builder.WithResultHostFactory). The result is
// lent for the length of the call only.
type ResultHostDecorator func(*deploy.Result, session.HostFactory) (session.HostFactory, error)

// Builder assembles a Runtime from a deployment document. A Builder is used
// once: configure it with the With* methods, then call Build.
type Builder struct {
	mu             sync.Mutex
	used           bool
	reg            *resource.Registry
	loader         resource.Loader
	hostDecorator  HostDecorator
	resultDecorate ResultHostDecorator
	external       map[string]ExternalResource
}

// NewBuilder returns a Builder that builds documents with reg. The registry
// must hold every factory the documents reference.
func NewBuilder(reg *resource.Registry) *Builder {
	return &Builder{reg: reg, external: map[string]ExternalResource{}}
}

// configure runs fn under the builder's lock unless Build has started.
func (b *Builder) configure(fn func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used {
		return ErrBuilderUsed
	}
	return fn()
}

// WithHostFactory sets the decorator of the base host factory. nil and a
// second setting are Validation errors (REF 1.3.3).
func (b *Builder) WithHostFactory(d HostDecorator) error {
	return b.configure(func() error {
		switch {
		case d == nil:
			return fault.New(fault.Validation, "with host factory", "decorator must not be nil")
		case b.hostDecorator != nil:
			return fault.New(fault.Validation, "with host factory", "already set")
		}
		b.hostDecorator = d
		return nil
	})
}

// WithResultHostFactory sets the decorator that runs after
// WithHostFactory's with access to the deployment. It is re-applied to each
// generation. nil and a second setting are Validation errors.
func (b *Builder) WithResultHostFactory(d ResultHostDecorator) error {
	return b.configure(func() error {
		switch {
		case d == nil:
			return fault.New(fault.Validation, "with result host factory", "decorator must not be nil")
		case b.resultDecorate != nil:
			return fault.New(fault.Validation, "with result host factory", "already set")
		}
		b.resultDecorate = d
		return nil
	})
}

// WithLoader sets the loader that resolves {file}/{embed} references and
// ${...} expansions; by default one rooted at the document's directory is
// used. nil and a second setting are Validation errors.
func (b *Builder) WithLoader(l resource.Loader) error {
	return b.configure(func() error {
		switch {
		case l == nil:
			return fault.New(fault.Validation, "with loader", "loader must not be nil")
		case b.loader != nil:
			return fault.New(fault.Validation, "with loader", "already set")
		}
		b.loader = l
		return nil
	})
}

// WithExternalResource injects one caller-owned value (REF 1.7.2): an
// invalid declaration or a nil value is Validation, a second injection of
// the same name is Conflict.
func (b *Builder) WithExternalResource(r ExternalResource) error {
	return b.configure(func() error {
		r, err := validateInjected(r)
		if err != nil {
			return err
		}
		if _, dup := b.external[r.Name]; dup {
			return fault.New(fault.Conflict, "with external resource", "%q is already injected", r.Name)
		}
		b.external[r.Name] = r
		return nil
	})
}

// Build validates doc, builds and wires its resources and agents, resolves
// the runtime roles and returns a running Runtime (REF 1.3). On any
// failure everything already built is closed and nothing leaks.
func (b *Builder) Build(ctx context.Context, doc *deploy.Document) (*Runtime, error) {
	b.mu.Lock()
	if b.used {
		b.mu.Unlock()
		return nil, ErrBuilderUsed
	}
	b.used = true
	b.mu.Unlock()

	switch {
	case ctx == nil:
		return nil, fault.New(fault.Validation, "build runtime", "ctx must not be nil")
	case b.reg == nil:
		return nil, fault.New(fault.Validation, "build runtime", "registry must not be nil")
	case doc == nil:
		return nil, fault.New(fault.Validation, "build runtime", "document must not be nil")
	}
	rt := &Runtime{
		reg:            b.reg,
		loader:         b.loader,
		hostDecorator:  b.hostDecorator,
		resultDecorate: b.resultDecorate,
		external:       b.external,
		router:         event.NewRouter(),
		events:         event.NewMemoryBus(),
	}
	if err := rt.router.AddBus(rt.events); err != nil {
		return nil, errors.Join(fault.Wrap(fault.Internal, err, "build runtime", "attach the runtime's bus"), rt.router.Close(), rt.events.Close())
	}
	gen, err := rt.buildGeneration(ctx, 1, doc, nil)
	if err != nil {
		return nil, errors.Join(err, rt.router.Close(), rt.events.Close())
	}
	if err := rt.router.AddBus(gen.bus); err != nil {
		return nil, errors.Join(fault.Wrap(fault.Internal, err, "build runtime", "attach bus"), gen.close(), rt.router.Close(), rt.events.Close())
	}
	if rt.sessions, err = newSessionManager(gen); err != nil {
		return nil, errors.Join(err, gen.close(), rt.router.Close(), rt.events.Close())
	}
	if err := bindManager(gen, rt.sessions); err != nil {
		return nil, errors.Join(err, rt.sessions.Close(), gen.close(), rt.router.Close(), rt.events.Close())
	}
	rt.gen = gen
	rt.nextGen = 2
	return rt, nil
}

// buildGeneration runs the document pipeline shared by Build and Reload:
// validate, decode the runtime section, check externals, deploy, resolve the
// roles, build the host factory and resolve the dynamic catalog. prev is
// the generation a Reload replaces (nil for Build): its bus must not be
// the new one. It closes what it built on failure.
func (rt *Runtime) buildGeneration(ctx context.Context, id uint64, doc *deploy.Document, prev *generation) (gen *generation, err error) {
	if err := doc.Validate(); err != nil {
		return nil, err
	}
	loader := rt.loader
	if loader == nil {
		loader = deploy.NewLoader(deploy.LoaderConfig{BaseDir: doc.BaseDir()})
	}
	cfg, err := decodeConfig(doc, doc.Runtime, loader.Expand)
	if err != nil {
		return nil, placeConfigErr(doc, err)
	}
	if err := checkRoles(cfg); err != nil {
		return nil, placeConfigErr(doc, err)
	}
	if err := matchExternals(cfg.ExternalDeps, rt.external, prev != nil); err != nil {
		return nil, placeConfigErr(doc, err)
	}
	if err := checkAgentTenants(doc, cfg); err != nil {
		return nil, err
	}
	result, err := deploy.Deploy(ctx, doc, deploy.Options{Registry: rt.reg, Loader: loader, External: rt.deployExternals(cfg)})
	if err != nil {
		return nil, err
	}
	g := &generation{id: id, doc: doc, hash: doc.Hash(), cfg: cfg, result: result}
	defer func() {
		if err != nil {
			err = errors.Join(err, g.close())
		}
	}()
	if err := g.resolveRoles(); err != nil {
		return nil, placeConfigErr(doc, err)
	}
	if prev != nil && sameBus(g.bus, prev.bus) {
		// The abort must not close the serving generation's bus.
		g.result.Detach(cfg.EventBus)
		return nil, placeConfigErr(doc, configErr("runtime.event_bus", fault.Conflict,
			"event_bus %q is the bus the serving generation uses; each generation needs its own bus", cfg.EventBus))
	}
	g.bindWorkerMemory()
	if g.hostFactory, err = rt.hostFactoryFor(g); err != nil {
		return nil, err
	}
	if err := g.checkCatalog(); err != nil {
		return nil, placeConfigErr(doc, err)
	}
	return g, nil
}

// sameBus reports whether a and b are one object (REF 1.10.3.5).
func sameBus(a, b event.Bus) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

// deployExternals passes the declared external values to deploy.
func (rt *Runtime) deployExternals(cfg Config) map[string]deploy.External {
	out := make(map[string]deploy.External, len(cfg.ExternalDeps))
	for _, d := range cfg.ExternalDeps {
		if v, ok := rt.external[d.Name]; ok {
			out[d.Name] = deploy.External{Contract: v.Contract, Value: v.Value}
		}
	}
	return out
}

// checkRoles refuses external dependencies in runtime-managed roles
// (REF 1.2.12, 1.7.7).
func checkRoles(cfg Config) error {
	external := map[string]bool{}
	for _, d := range cfg.ExternalDeps {
		external[d.Name] = true
	}
	roles := []struct{ path, name string }{{"runtime.event_bus", cfg.EventBus}, {"runtime.checkpoint_store", cfg.CheckpointStore}}
	if cfg.DynamicCatalog != nil {
		for _, k := range sortedKeys(cfg.DynamicCatalog.Tools) {
			roles = append(roles, struct{ path, name string }{"runtime.dynamic_catalog.tools." + k, cfg.DynamicCatalog.Tools[k]})
		}
	}
	for _, r := range roles {
		if r.name != "" && external[r.name] {
			return configErr(r.path, fault.Validation,
				"%q is an external dependency; runtime roles must name regular deployment resources", r.name)
		}
	}
	return nil
}

// placeConfigErr turns a *ConfigError into a *deploy.Error that names the
// file and line of the key (or of its nearest written parent).
func placeConfigErr(doc *deploy.Document, err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	for path := ce.Path; path != ""; path = parentPath(path) {
		if pos, ok := doc.Pos(path); ok {
			return &deploy.Error{Pos: pos, Path: ce.Path, Err: ce.Err}
		}
	}
	return &deploy.Error{Pos: deploy.Position{File: doc.File()}, Path: ce.Path, Err: ce.Err}
}

func parentPath(p string) string {
	cut := strings.LastIndexAny(p, ".[")
	if cut <= 0 {
		return ""
	}
	return p[:cut]
}

// newSessionManager builds the session manager for the first generation
// with the tunables of its runtime: section.
func newSessionManager(g *generation) (*session.Manager, error) {
	return session.NewManagerWithConfig(g.sessionDeps(), session.Config{Tunables: g.cfg.Sessions.Tunables, Quotas: g.cfg.Tenants})
}

// bindWorkerMemory hands each resource that caps its workers' memory
// (session.WorkerMemoryBinder) the memory_per_worker quotas of g's tenants.
func (g *generation) bindWorkerMemory() {
	tenants := g.cfg.Tenants
	quota := func(tenant string) int64 { return tenants[tenant].MemoryPerWorker }
	for _, n := range g.result.Order() {
		if v, _ := g.result.Value(n); v != nil {
			if b, ok := v.(session.WorkerMemoryBinder); ok {
				b.BindWorkerMemory(quota)
			}
		}
	}
}

// bindManager hands the manager to the one resource that implements
// session.ManagerBinder, if any (REF 1.3.8).
func bindManager(g *generation, m *session.Manager) error {
	var binder session.ManagerBinder
	var name string
	for _, n := range g.result.Order() {
		v, _ := g.result.Value(n)
		b, ok := v.(session.ManagerBinder)
		if !ok {
			continue
		}
		if binder != nil {
			return fault.New(fault.Conflict, "build runtime",
				"resources %q and %q both implement session.ManagerBinder; at most one may", name, n)
		}
		binder, name = b, n
	}
	if binder == nil {
		return nil
	}
	if err := binder.BindSessionManager(m); err != nil {
		return fmt.Errorf("build runtime: bind session manager to %q: %w", name, err)
	}
	return nil
}
