package resource

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/corral-rt/corral/fault"
)

// Factory builds one kind of resource.
type Factory interface {
	// Spec describes what the factory builds. It must return the same value
	// every time.
	Spec() Spec
	// New builds a value from in. It decodes in.Settings strictly.
	New(ctx context.Context, in Input) (any, error)
}

// Spec describes a factory.
type Spec struct {
	Kind     string    // the contract the value meets, for example "event.Bus"; required
	Impl     string    // the implementation, for example "memory"; may be empty
	Deps     []DepSpec // the dependency roles the factory accepts
	ItemType string    // the contract of items, when the value is an ItemResolver
}

// DepSpec declares one dependency role of a factory.
type DepSpec struct {
	Name     string // the role, as written under deps in the document
	Type     string // the contract the dependency's value must meet
	Required bool   // the document must bind it
	Many     bool   // the document may bind "name" and any "name.<suffix>"
}

// Key returns "kind/impl", the form used in messages.
func (s Spec) Key() string { return s.Kind + "/" + s.Impl }

// Validate checks the spec's own shape.
func (s Spec) Validate() error {
	if strings.TrimSpace(s.Kind) == "" {
		return fault.New(fault.Validation, "register factory", "spec kind is required")
	}
	seen := map[string]bool{}
	for i, d := range s.Deps {
		switch {
		case strings.TrimSpace(d.Name) == "":
			return fault.New(fault.Validation, "register factory", "%s: deps[%d]: name is required", s.Key(), i)
		case strings.TrimSpace(d.Type) == "":
			return fault.New(fault.Validation, "register factory", "%s: dep %q: type is required", s.Key(), d.Name)
		case strings.HasSuffix(d.Name, "."):
			return fault.New(fault.Validation, "register factory", "%s: dep %q: a name must not end in '.'", s.Key(), d.Name)
		case seen[d.Name]:
			return fault.New(fault.Validation, "register factory", "%s: dep %q is declared twice", s.Key(), d.Name)
		}
		seen[d.Name] = true
	}
	return nil
}

// MatchDep returns the DepSpec that a document dependency key binds: the
// spec of the same name, or a Many spec whose name is the key's prefix
// before a '.'.
func (s Spec) MatchDep(key string) (DepSpec, bool) {
	for _, d := range s.Deps {
		if d.Name == key {
			return d, true
		}
	}
	for _, d := range s.Deps {
		if d.Many && strings.HasPrefix(key, d.Name+".") && len(key) > len(d.Name)+1 {
			return d, true
		}
	}
	return DepSpec{}, false
}

// Registry holds factories by (kind, impl). Create one with NewRegistry (an
// empty zero value works too). A Registry is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	factories map[string]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Register adds factories. A spec that does not validate is a Validation
// error; a (kind, impl) already registered is a Conflict. Nothing is added
// when any factory is refused.
func (r *Registry) Register(fs ...Factory) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.factories == nil {
		r.factories = map[string]Factory{}
	}
	batch := map[string]Factory{}
	for _, f := range fs {
		if f == nil {
			return fault.New(fault.Validation, "register factory", "factory must not be nil")
		}
		spec := f.Spec()
		if err := spec.Validate(); err != nil {
			return err
		}
		k := spec.Key()
		if _, dup := r.factories[k]; dup {
			return fault.New(fault.Conflict, "register factory", "%s is already registered", k)
		}
		if _, dup := batch[k]; dup {
			return fault.New(fault.Conflict, "register factory", "%s is registered twice", k)
		}
		batch[k] = f
	}
	for k, f := range batch {
		r.factories[k] = f
	}
	return nil
}

// MustRegister is Register that panics on error, for main and tests.
func (r *Registry) MustRegister(fs ...Factory) {
	if err := r.Register(fs...); err != nil {
		panic(err)
	}
}

// Lookup returns the factory registered for exactly (kind, impl).
func (r *Registry) Lookup(kind, impl string) (Factory, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.factories[kind+"/"+impl]
	return f, ok
}

// Specs lists the specs of every registered factory, sorted by kind then
// impl.
func (r *Registry) Specs() []Spec {
	r.mu.RLock()
	out := make([]Spec, 0, len(r.factories))
	for _, f := range r.factories {
		out = append(out, f.Spec())
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Spec) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Impl, b.Impl)
	})
	return out
}

// FactoryFunc adapts a spec and a function to a Factory.
func FactoryFunc(spec Spec, fn func(ctx context.Context, in Input) (any, error)) Factory {
	return funcFactory{spec: spec, fn: fn}
}

type funcFactory struct {
	spec Spec
	fn   func(ctx context.Context, in Input) (any, error)
}

func (f funcFactory) Spec() Spec { return f.spec }
func (f funcFactory) New(ctx context.Context, in Input) (any, error) {
	return f.fn(ctx, in)
}

// Wireable values are called once every value of the deployment is built,
// in build order. A failure fails the deployment.
type Wireable interface {
	Wire(ctx context.Context) error
}

// ItemResolver values let documents reference "name/item".
type ItemResolver interface {
	ResolveItem(item string) (any, error)
}

// DeploymentBinder values receive the assembled deployment after wiring.
// The argument is the deployment's result (a *deploy.Result); it is typed
// any here so that this package stays below deploy.
type DeploymentBinder interface {
	BindDeployment(result any) error
}

// DecodeSettings decodes JSON settings into out strictly: unknown keys,
// values of the wrong type and trailing data are Validation errors that
// hold a *FieldError naming the value's path (DecodeStrict). Empty
// settings decode as {}.
func DecodeSettings(data []byte, out any) error {
	if err := DecodeStrict(data, out); err != nil {
		return fault.Wrap(fault.KindOr(err, fault.Validation), err, "decode settings", "")
	}
	return nil
}

// DecodeTyped decodes settings strictly into a new T.
func DecodeTyped[T any](data []byte) (T, error) {
	var v T
	err := DecodeSettings(data, &v)
	return v, err
}

// As converts a dependency value to T with an error that names the role
// and the types involved.
func As[T any](role string, v any) (T, error) {
	t, ok := v.(T)
	if !ok {
		var zero T
		return zero, fault.New(fault.Validation, "resolve dep", "dep %q: %T is not a %s", role, v, reflect.TypeFor[T]())
	}
	return t, nil
}
