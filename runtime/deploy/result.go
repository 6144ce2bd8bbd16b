package deploy

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
)

// External is a value that the application owns and lends to the
// deployment (the runtime's external_deps). Deploy hands it to the
// factories whose deps name it, but never builds, wires, closes or lists
// it. Contract must equal the DepSpec.Type of every factory dep that
// names it.
type External struct {
	Contract string
	Value    any
}

// Options configures Build, Deploy and BindAgent.
type Options struct {
	// Registry holds the factories; required.
	Registry *resource.Registry
	// Loader resolves settings references and is handed to factories; nil
	// means NewLoader(LoaderConfig{BaseDir: doc.BaseDir()}).
	Loader resource.Loader
	// External maps a dependency name to a caller-owned value.
	External map[string]External
}

// Result is a built deployment: the resource values in build order and,
// once wired, the bound agents. It owns what it built: Close closes it.
// A Result is safe for concurrent use.
type Result struct {
	doc      *Document
	registry *resource.Registry
	loader   resource.Loader
	external map[string]External
	order    []string
	values   map[string]any

	mu       sync.RWMutex
	agents   map[string]*agent.Agent
	detached map[string]bool
	wired    bool

	closeOnce sync.Once
	closeErr  error
}

var _ io.Closer = (*Result)(nil)

// Document returns the document the result was built from.
func (r *Result) Document() *Document { return r.doc }

// Value returns the built value of the resource name. External
// dependencies are not listed.
func (r *Result) Value(name string) (any, bool) {
	v, ok := r.values[name]
	return v, ok
}

// Names returns the names of the built resources, sorted.
func (r *Result) Names() []string { return sortedKeys(r.values) }

// Order returns the names of the built resources in build order.
func (r *Result) Order() []string { return slices.Clone(r.order) }

// Agent returns the bound agent id.
func (r *Result) Agent(id string) (*agent.Agent, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[id]
	return a, ok
}

// AgentNames returns the ids of the bound agents, sorted.
func (r *Result) AgentNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedKeys(r.agents)
}

// Detach marks resource values that Close must leave open, because their
// ownership moves elsewhere (a bus shared with another generation). Names
// that are not built resources are ignored.
func (r *Result) Detach(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if _, ok := r.values[n]; ok {
			r.detached[n] = true
		}
	}
}

// Close closes every resource value that implements io.Closer in reverse
// build order, skipping typed nils and detached values, then every bound
// agent in id order. Errors are joined. Close is idempotent: later calls
// return the first result.
func (r *Result) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		detached := maps.Clone(r.detached)
		agents := r.agents
		r.mu.Unlock()
		errs := closeValues(r.order, r.values, detached)
		for _, id := range sortedKeys(agents) {
			if err := agents[id].Close(); err != nil {
				errs = append(errs, fmt.Errorf("close agent %q: %w", id, err))
			}
		}
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

// closeValues closes the values of order in reverse, skipping skip.
func closeValues(order []string, values map[string]any, skip map[string]bool) []error {
	var errs []error
	for _, name := range slices.Backward(order) {
		if skip[name] {
			continue
		}
		if err := closeValue(values[name]); err != nil {
			errs = append(errs, fmt.Errorf("close resource %q: %w", name, err))
		}
	}
	return errs
}

// closeValue closes v when it is an io.Closer and not a typed nil.
func closeValue(v any) error {
	c, ok := v.(io.Closer)
	if !ok || agent.IsNil(v) {
		return nil
	}
	return c.Close()
}
