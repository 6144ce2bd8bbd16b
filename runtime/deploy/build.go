package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
)

// Build validates doc and builds its resources in dependency order (every
// resource after the resources its deps name, ties alphabetical). For each
// resource it looks up the factory, checks the deps against the factory's
// Spec, resolves {file}/{embed} settings, resolves the deps (including
// "name/item") and calls New. Agents are bound later, by Wire.
//
// Build is a transaction: when a step fails, every value already built is
// closed in reverse order and the error is returned. Document errors are
// *Error values naming the resource's position.
func Build(ctx context.Context, doc *Document, opts Options) (res *Result, err error) {
	if err := checkBuildArgs(ctx, doc, opts); err != nil {
		return nil, err
	}
	if err := doc.Validate(); err != nil {
		return nil, err
	}
	if err := checkExternals(doc, opts.External); err != nil {
		return nil, err
	}
	g, err := newResourceGraph(doc, opts.External)
	if err != nil {
		return nil, err
	}
	order, err := g.order()
	if err != nil {
		return nil, err
	}
	r := newResult(doc, opts)
	defer func() {
		if err != nil {
			if cerr := errors.Join(closeValues(r.order, r.values, nil)...); cerr != nil {
				err = errors.Join(err, cerr)
			}
			res = nil
		}
	}()
	for _, name := range order {
		if err := ctx.Err(); err != nil {
			return nil, fault.FromContext(err, "deploy")
		}
		v, err := r.buildResource(ctx, name)
		if err != nil {
			return nil, err
		}
		r.order = append(r.order, name)
		r.values[name] = v
	}
	return r, nil
}

func checkBuildArgs(ctx context.Context, doc *Document, opts Options) error {
	switch {
	case ctx == nil:
		return fault.New(fault.Validation, "deploy", "context must not be nil")
	case doc == nil:
		return fault.New(fault.Validation, "deploy", "document must not be nil")
	case opts.Registry == nil:
		return fault.New(fault.Validation, "deploy", "registry must not be nil")
	}
	return nil
}

// checkExternals checks the caller's external dependencies: a name that is
// non-blank and has no '/', a contract, a value, and no name shared with a
// document resource (Conflict).
func checkExternals(doc *Document, ext map[string]External) error {
	for _, name := range sortedKeys(ext) {
		e := ext[name]
		switch {
		case strings.TrimSpace(name) == "":
			return fault.New(fault.Validation, "deploy", "external dependency name is empty")
		case strings.Contains(name, "/"):
			return fault.New(fault.Validation, "deploy", "external dependency %q: a name must not contain '/'", name)
		case strings.TrimSpace(e.Contract) == "":
			return fault.New(fault.Validation, "deploy", "external dependency %q: contract is required", name)
		case agent.IsNil(e.Value):
			return fault.New(fault.Validation, "deploy", "external dependency %q: value must not be nil", name)
		}
		if _, clash := doc.Resources[name]; clash {
			return doc.errorAt(childPath("resources", name), "",
				fault.New(fault.Conflict, "", "external dependency %q has the name of a document resource", name))
		}
	}
	return nil
}

func newResult(doc *Document, opts Options) *Result {
	if opts.Loader == nil {
		opts.Loader = NewLoader(LoaderConfig{BaseDir: doc.BaseDir()})
	}
	return &Result{
		doc:      doc,
		registry: opts.Registry,
		loader:   opts.Loader,
		external: maps.Clone(opts.External),
		values:   make(map[string]any, len(doc.Resources)),
		agents:   map[string]*agent.Agent{},
		detached: map[string]bool{},
	}
}

// buildResource builds the document resource name.
func (r *Result) buildResource(ctx context.Context, name string) (any, error) {
	e := r.doc.Resources[name]
	path := childPath("resources", name)
	op := fmt.Sprintf("build resource %q", name)
	b := binding{r: r, doc: r.doc, registry: r.registry, loader: r.loader, external: r.external, op: op, path: path}
	f, err := b.lookup(e.Kind, e.Impl, path+".kind")
	if err != nil {
		return nil, err
	}
	deps, err := b.deps(f.Spec(), e.Deps, path+".deps")
	if err != nil {
		return nil, err
	}
	settings, ref, err := b.settings(ctx, e.Settings, path+".settings")
	if err != nil {
		return nil, err
	}
	v, err := f.New(ctx, resource.Input{Name: name, Settings: settings, Deps: deps, Loader: r.loader})
	if err != nil {
		return nil, b.wrapSettings(path, ref, err)
	}
	return v, nil
}

// binding is what resolving one resource, engine or hook needs: where the
// values come from, and how errors are named.
type binding struct {
	r        *Result
	doc      *Document // positions; may differ from r.doc for dynamic agents
	registry *resource.Registry
	loader   resource.Loader
	external map[string]External
	kind     *fault.Kind // when set, the kind of every error (BindAgent: Validation)
	op       string      // prefixes messages: build resource "bus"
	path     string      // the entity: resources.bus, agents.qa.engine
}

func (b binding) fail(path, at, format string, args ...any) error {
	return b.doc.errorAt(path, at, fault.New(fault.Validation, b.op, format, args...))
}

// wrap returns err as a document error at path, keeping its kind unless
// the binding imposes one (Validation when it has none); msg may be empty.
// A refusal on policy grounds (Forbidden: a path that leaves the base
// directory or a workspace) keeps its kind even where the binding imposes
// one, so that an escape is Forbidden wherever it is written.
func (b binding) wrap(path, msg string, err error) error {
	kind := b.kind
	if fault.Is(err, fault.Forbidden) {
		kind = fault.Forbidden
	}
	if kind == nil {
		kind = fault.KindOf(err)
	}
	if kind == nil {
		kind = fault.Validation
	}
	return b.doc.errorAt(path, "", fault.Wrap(kind, err, b.op, "%s", msg))
}

func (b binding) lookup(kind, impl, at string) (resource.Factory, error) {
	f, ok := b.registry.Lookup(kind, impl)
	if !ok {
		return nil, b.fail(b.path, at, "no factory for %s/%s", kind, impl)
	}
	return f, nil
}

// deps checks the document deps against spec and resolves them to values.
// path is the deps mapping.
func (b binding) deps(spec resource.Spec, deps map[string]string, path string) (map[string]any, error) {
	keys := sortedKeys(deps)
	for _, k := range keys {
		ds, ok := spec.MatchDep(k)
		if !ok {
			return nil, b.fail(childPath(path, k), "", "undeclared dep %q (%s declares %s)", k, spec.Key(), declared(spec))
		}
		target, _ := splitRef(deps[k])
		if ext, isExt := b.external[target]; isExt && ext.Contract != ds.Type {
			return nil, b.fail(childPath(path, k), "",
				"dep %q: external dependency %q has contract %q, the factory wants %q", k, target, ext.Contract, ds.Type)
		}
	}
	for _, ds := range spec.Deps {
		if ds.Required && !bound(ds, keys) {
			many := ""
			if ds.Many {
				many = "many "
			}
			return nil, b.fail(b.path, path, "required %sdep %q missing", many, ds.Name)
		}
	}
	out := make(map[string]any, len(deps))
	for _, k := range keys {
		v, err := b.resolve(k, deps[k], childPath(path, k))
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func declared(spec resource.Spec) string {
	if len(spec.Deps) == 0 {
		return "no deps"
	}
	names := make([]string, len(spec.Deps))
	for i, d := range spec.Deps {
		names[i] = fmt.Sprintf("%q", d.Name)
	}
	return strings.Join(names, ", ")
}

// bound reports whether the document keys bind ds.
func bound(ds resource.DepSpec, keys []string) bool {
	for _, k := range keys {
		if k == ds.Name || (ds.Many && strings.HasPrefix(k, ds.Name+".") && len(k) > len(ds.Name)+1) {
			return true
		}
	}
	return false
}

// resolve returns the value a reference names: an external value or a
// built resource, or one of its items.
func (b binding) resolve(key, ref, path string) (any, error) {
	target, item := splitRef(ref)
	var v any
	if ext, ok := b.external[target]; ok {
		v = ext.Value
	} else if bv, ok := b.r.values[target]; ok {
		v = bv
	} else {
		return nil, b.fail(path, "", "dep %q references unbuilt resource %q", key, target)
	}
	if item == "" {
		return v, nil
	}
	ir, ok := v.(resource.ItemResolver)
	if !ok || agent.IsNil(v) {
		return nil, b.fail(path, "", "dep %q: resource %q does not expose items", key, target)
	}
	iv, err := ir.ResolveItem(item)
	if err != nil {
		return nil, b.doc.errorAt(path, "", fault.Wrap(fault.Validation, err, b.op, "dep %q: resource %q has no item %q", key, target, item))
	}
	return iv, nil
}

// settingsRef is settings loaded from a {file}/{embed} reference: the
// name it was loaded under and its text, to place errors in it.
type settingsRef struct {
	file string
	data []byte
}

// settings resolves a whole-subtree {file}/{embed} reference to JSON;
// other settings pass through.
func (b binding) settings(ctx context.Context, raw []byte, path string) ([]byte, *settingsRef, error) {
	src, ok := resource.SourceOf(raw)
	if !ok {
		return raw, nil, nil
	}
	data, err := b.loader.Load(ctx, src)
	if err != nil {
		return nil, nil, b.wrap(path, "settings", err)
	}
	out, err := resource.YAMLToJSON(data)
	if err != nil {
		return nil, nil, b.wrap(path, "settings", fmt.Errorf("%s: %w", sourceLabel(src), err))
	}
	ref := &settingsRef{file: src.File, data: data}
	if src.File == "" {
		ref.file = "embed:" + src.Embed
	}
	return out, ref, nil
}

// wrapSettings returns the error of a factory built at path. An error
// that holds a *resource.FieldError is placed at the value it names: in
// the file it names, in the settings file ref, or in the document under
// path.settings. Other errors are placed at path, as wrap does.
func (b binding) wrapSettings(path string, ref *settingsRef, err error) error {
	var fe *resource.FieldError
	if !errors.As(err, &fe) {
		return b.wrap(path, "", err)
	}
	kind := b.kind
	if kind == nil {
		kind = fault.KindOr(err, fault.Validation)
	}
	msg := &placedError{msg: fe.Msg + " (" + b.op + ")", kind: kind, cause: err}
	switch {
	case fe.File != "":
		return &Error{Pos: Position{File: b.refName(fe.File), Line: fe.Line}, Path: fe.Path, Err: msg}
	case ref != nil:
		return &Error{Pos: Position{File: b.refName(ref.file), Line: resource.LineWithin(ref.data, fe.At(), fe.Within)}, Path: fe.Path, Err: msg}
	}
	full := resource.JoinPath(path+".settings", fe.Path)
	placed := b.doc.errorAt(full, resource.JoinPath(full, fe.Key), msg)
	if start, ok := b.doc.text[full]; ok && fe.Within > 0 {
		placed.Pos.Line, placed.Pos.Column = start+fe.Within-1, 0
	}
	return placed
}

// refName names a referenced file in positions: relative to the
// document's base directory, as the document's own name is relative to
// the working directory.
func (b binding) refName(file string) string {
	base := b.doc.BaseDir()
	if base == "" || base == "." || strings.HasPrefix(file, "embed:") || filepath.IsAbs(file) {
		return file
	}
	return filepath.Join(base, file)
}

// placedError is the message of a placed FieldError; it keeps the
// factory's whole error as its cause for errors.Is and errors.As.
type placedError struct {
	msg   string
	kind  *fault.Kind
	cause error
}

func (e *placedError) Error() string   { return e.msg }
func (e *placedError) Unwrap() []error { return []error{e.kind, e.cause} }
