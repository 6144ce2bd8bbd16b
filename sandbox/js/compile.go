package js

import (
	"container/list"
	"errors"
	"reflect"
	"sync"
	"unsafe"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox/js/internal/bigop"
	"github.com/corral-rt/corral/sandbox/js/internal/fnname"
	"github.com/corral-rt/corral/sandbox/js/internal/fold"
	"github.com/corral-rt/corral/sandbox/js/jsscan"
	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"
	"github.com/dop251/goja/unistring"
)

// A script is the body of a function: it runs with the globals in scope
// and may end early with return. The wrapper adds no line, so line numbers
// are the script's own.
const (
	scriptPrefix = "(function() {"
	scriptSuffix = "\n})"
)

// spreadGuard is the global the compiler routes object spread, object rest
// and for-in sources through: a name no script can write, declare or
// shadow (with statements are refused).
const spreadGuard = "\x00spread"

// arraySpreadGuard is the global the compiler routes the sources of array
// spread ([...a], f(...a), new F(...a)) through: an array whose length
// does not fit the memory budget is refused before the engine loops over
// it in Go.
const arraySpreadGuard = "\x00spreadArray"

// compiled is a program and the identifiers it mentions (an expression's
// free names are defined as undefined so that a missing var reads as
// undefined rather than throwing).
type compiled struct {
	prog   *goja.Program
	idents []string
	// sharedGlobal is set for a node script that cannot reach its global
	// object (needsOwnGlobal), which may then run with a shared one.
	sharedGlobal bool
	// bigint: the program can make a BigInt (jsscan.Info); its BigInt
	// operators are bounded (bigop) and its calls may make BigInts.
	bigint bool
	// varsByName is set for an expression that cannot reach its global
	// object (needsOwnGlobal): it sees a var only by naming it, so only
	// the vars it names are made for it.
	varsByName bool
}

// compileScript parses a node script as a function body, guards it and
// compiles it. Errors are of kind Validation.
func compileScript(name, source string) (*compiled, error) {
	info, err := jsscan.Script(source)
	if err != nil {
		return nil, scanError(name, err)
	}
	prg, err := parse(name, scriptPrefix+source+scriptSuffix)
	if err != nil {
		return nil, err
	}
	if !isWrappedFunction(prg) {
		return nil, fault.New(fault.Validation, "compile "+name, "the script is not a function body (unbalanced braces?)")
	}
	comp, err := compileAST(name, prg, info.BigInt)
	if err != nil {
		return nil, err
	}
	comp.sharedGlobal = !needsOwnGlobal(prg)
	return comp, nil
}

// CheckScript compiles source as Invoke compiles a node script, and runs
// nothing: nil, or the Validation error naming the line (corral validate).
func CheckScript(source string) error { _, err := compileScript("script", source); return err }

// CheckExpr is CheckScript for a graph condition or expression (Eval).
func CheckExpr(expr string) error { _, err := compileExpr("expression", expr); return err }

// compileExpr parses a single expression, guards it and compiles it.
func compileExpr(name, expr string) (*compiled, error) {
	info, err := jsscan.Expr(expr)
	if err != nil {
		return nil, scanError(name, err)
	}
	prg, err := parse(name, "("+expr+"\n)")
	if err != nil {
		return nil, err
	}
	if len(prg.Body) != 1 {
		return nil, fault.New(fault.Validation, "compile "+name, "not a single expression")
	}
	if _, ok := prg.Body[0].(*ast.ExpressionStatement); !ok {
		return nil, fault.New(fault.Validation, "compile "+name, "not a single expression")
	}
	comp, err := compileAST(name, prg, info.BigInt)
	if err != nil {
		return nil, err
	}
	comp.varsByName = !needsOwnGlobal(prg)
	return comp, nil
}

// compileCode compiles code for eval and Function, scanned for info. Its
// BigInt operators are always bounded: it runs in calls of either kind.
func compileCode(name, src string, info jsscan.Info) (*compiled, error) {
	prg, err := parse(name, src)
	if err != nil {
		return nil, err
	}
	comp, err := compileAST(name, prg, true)
	if comp != nil {
		comp.bigint = info.BigInt
	}
	return comp, err
}

// scanError is the Validation error of a source package jsscan refused.
func scanError(name string, err error) error {
	return fault.Wrap(fault.Validation, err, "compile "+name, "")
}

func parse(name, src string) (*ast.Program, error) {
	// Source maps are off: the parser would otherwise read any file a
	// sourceMappingURL comment names.
	prg, err := parser.ParseFile(nil, name, src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, "compile "+name, "")
	}
	return prg, nil
}

func compileAST(name string, prg *ast.Program, bigint bool) (*compiled, error) {
	if err := errors.Join(fold.Check(prg), fnname.Check(prg), bigop.Rewrite(prg, bigint)); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "compile "+name, "")
	}
	g := &astGuard{seen: map[any]bool{}, idents: map[string]bool{}, guarded: map[*ast.ObjectPattern]bool{}}
	if err := g.walk(reflect.ValueOf(prg)); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "compile "+name, "")
	}
	if arrowArguments(reflect.ValueOf(prg), false, map[any]bool{}) {
		return nil, fault.Wrap(fault.Validation, errArrowArguments, "compile "+name, "")
	}
	p, err := goja.CompileAST(prg, false)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, "compile "+name, "")
	}
	out := &compiled{prog: p, bigint: bigint}
	for id := range g.idents {
		if id != spreadGuard && id != arraySpreadGuard && id != bigop.Global {
			out.idents = append(out.idents, id)
		}
	}
	return out, nil
}

// astGuard walks a parsed program: it refuses with statements, routes the
// sources of object spread, object rest and for-in through spreadGuard
// (they copy every character of a string into a property, in a loop the
// VM cannot interrupt), refuses the object rest patterns whose source it
// cannot route (parameters, nested patterns, loop heads) and collects
// identifiers.
type astGuard struct {
	seen    map[any]bool
	idents  map[string]bool
	guarded map[*ast.ObjectPattern]bool // object rest patterns whose source is guarded
}

var (
	fileType     = reflect.TypeOf((*file.File)(nil))
	errWithStmts = errors.New("with statements are not supported")
	// An object rest pattern copies every own property of its source in
	// one step; the source of a parameter or a nested pattern cannot be
	// checked first.
	errObjectRest = errors.New("an object rest pattern ({...rest}) is supported only at the top of a declaration " +
		"or an assignment; destructure a parameter in the function body")
)

// errArrowArguments refuses a script whose arrow function reads the
// arguments of the function around it: the script engine fails on it at
// run time (an index out of range in its VM) instead of running it.
var errArrowArguments = errors.New("arguments is not available inside an arrow function (a limit of the script " +
	"engine); use a rest parameter (...args) or a function expression")

// arrowArguments reports whether the identifier arguments appears inside
// an arrow function, not inside a function expression or declaration
// nested in it (whose own arguments it is). Property names (a.arguments)
// are not identifiers here.
func arrowArguments(v reflect.Value, inArrow bool, seen map[any]bool) bool {
	switch v.Kind() {
	case reflect.Interface:
		return !v.IsNil() && arrowArguments(v.Elem(), inArrow, seen)
	case reflect.Pointer:
		if v.IsNil() || v.Type() == fileType {
			return false
		}
		switch n := v.Interface().(type) {
		case *ast.ArrowFunctionLiteral:
			inArrow = true
		case *ast.FunctionLiteral:
			inArrow = false
		case *ast.Identifier:
			return inArrow && n.Name == "arguments"
		}
		key := [2]any{v.Interface(), inArrow}
		if seen[key] {
			return false
		}
		seen[key] = true
		return arrowArguments(v.Elem(), inArrow, seen)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if arrowArguments(v.Field(i), inArrow, seen) {
				return true
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if arrowArguments(v.Index(i), inArrow, seen) {
				return true
			}
		}
	}
	return false
}

func (g *astGuard) walk(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return g.walk(v.Elem())
	case reflect.Pointer:
		if v.IsNil() || v.Type() == fileType {
			return nil
		}
		n := v.Interface()
		if g.seen[n] {
			return nil
		}
		g.seen[n] = true
		if err := g.visit(n); err != nil {
			return err
		}
		return g.walk(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if err := g.walk(v.Field(i)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if err := g.walk(v.Index(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *astGuard) visit(n any) error {
	switch t := n.(type) {
	case *ast.WithStatement:
		return errWithStmts
	case *ast.Identifier:
		g.idents[t.Name.String()] = true
	case *ast.PropertyShort: // {x} names x; its Name is not a pointer the walk visits
		g.idents[t.Name.Name.String()] = true
	case *ast.ObjectLiteral:
		for _, p := range t.Value {
			if s, ok := p.(*ast.SpreadElement); ok {
				s.Expression = guardCall(s.Expression)
			}
		}
	case *ast.ArrayLiteral:
		guardSpreads(t.Value)
	case *ast.CallExpression:
		guardSpreads(t.ArgumentList)
	case *ast.NewExpression:
		guardSpreads(t.ArgumentList)
	case *ast.ForInStatement:
		t.Source = guardCall(t.Source)
	case *ast.Binding:
		if p, ok := t.Target.(*ast.ObjectPattern); ok && p.Rest != nil && t.Initializer != nil {
			t.Initializer = guardCall(t.Initializer)
			g.guarded[p] = true
		}
	case *ast.AssignExpression:
		if p, ok := t.Left.(*ast.ObjectPattern); ok && p.Rest != nil {
			t.Right = guardCall(t.Right)
			g.guarded[p] = true
		}
	case *ast.ObjectPattern:
		if t.Rest != nil && !g.guarded[t] {
			return errObjectRest
		}
	}
	return nil
}

// guardSpreads routes the source of every spread element of list through
// arraySpreadGuard.
func guardSpreads(list []ast.Expression) {
	for _, e := range list {
		if s, ok := e.(*ast.SpreadElement); ok {
			s.Expression = guardCallOf(arraySpreadGuard, s.Expression)
		}
	}
}

func guardCall(e ast.Expression) ast.Expression { return guardCallOf(spreadGuard, e) }

func guardCallOf(guard string, e ast.Expression) ast.Expression {
	at := e.Idx0()
	return &ast.CallExpression{
		Callee:           &ast.Identifier{Name: unistring.String(guard), Idx: at},
		LeftParenthesis:  at,
		ArgumentList:     []ast.Expression{e},
		RightParenthesis: e.Idx1(),
	}
}

// runCode compiles src (guarded, cached apart from node scripts) and runs
// it in the global scope. A syntax error is thrown to the script as a
// SyntaxError.
func (c *call) runCode(name, src string) goja.Value {
	c.checkStop()
	comp, err := c.rt.programs.get(cacheKey(keyCode, name, src), func() (*compiled, error) {
		info, err := jsscan.Code(src)
		if err != nil {
			return nil, scanError(name, err)
		}
		return compileCode(name, src, info)
	})
	if errors.As(err, new(*jsscan.Error)) {
		c.refuseSource("code made at run time", err)
	}
	if err != nil {
		panic(c.syntaxError(err.Error()))
	}
	if comp.bigint {
		c.bigSource()
	}
	c.ranCode = true
	v, err := c.vm.RunProgram(comp.prog)
	rethrow(err)
	return v
}

func (c *call) syntaxError(msg string) *goja.Object {
	if ctor, _ := c.vm.Get("SyntaxError").(*goja.Object); ctor != nil {
		if o, err := c.vm.New(ctor, c.vm.ToValue(msg)); err == nil {
			return o
		}
	}
	return c.vm.NewTypeError(msg)
}

// programCache keeps compiled programs by their kind, name and source,
// least recently used first out. A goja.Program is immutable and
// may run in many VMs at once.
type programCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *cacheEntry, most recent at the front
	byKey map[programKey]*list.Element
	// byID finds an entry by where its key's strings are, without hashing
	// the source (sourceIdentity); one identity per entry.
	byID map[sourceIdentity]*list.Element
}

type cacheEntry struct {
	key  programKey
	comp *compiled
}

// sourceIdentity is where a key's name and source are: the graph engine
// hands the same strings to every call of a node, which then skips
// hashing its source (a script of a few KiB costs about a microsecond to
// hash and compare). An identity is remembered only for the strings of an
// entry's own key: the entry keeps them alive while it is cached, so no
// other string can take their place. Another copy of the same source is
// found by its hash, as before.
type sourceIdentity struct {
	kind            byte
	name, source    *byte
	nameLen, srcLen int
}

func identityOf(key programKey) sourceIdentity {
	return sourceIdentity{kind: key.kind, name: unsafe.StringData(key.name), source: unsafe.StringData(key.source),
		nameLen: len(key.name), srcLen: len(key.source)}
}

func newProgramCache(max int) *programCache {
	return &programCache{max: max, order: list.New(), byKey: make(map[programKey]*list.Element),
		byID: make(map[sourceIdentity]*list.Element)}
}

// The kinds of program a cache key names: the same name and source
// compile differently as a node script, as code for eval or Function, and
// as an expression, so each kind has its own keys.
const (
	keyScript byte = iota + 1
	keyCode
	keyExpr
)

// programKey names a program: its kind, name and source.
type programKey struct {
	kind         byte
	name, source string
}

func cacheKey(kind byte, name, source string) programKey {
	return programKey{kind: kind, name: name, source: source}
}

// peek returns the program of key, or nil when it is not cached.
func (c *programCache) peek(key programKey) *compiled {
	id := identityOf(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		el, ok = c.byKey[key]
	}
	if !ok {
		return nil
	}
	if c.order.Front() != el {
		c.order.MoveToFront(el)
	}
	return el.Value.(*cacheEntry).comp
}

// get returns the program of key, compiling it with compile on a miss. A
// compile error is not cached.
func (c *programCache) get(key programKey, compile func() (*compiled, error)) (*compiled, error) {
	if p := c.peek(key); p != nil {
		return p, nil
	}
	id := identityOf(key)
	p, err := compile()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*cacheEntry).comp, nil
	}
	el := c.order.PushFront(&cacheEntry{key: key, comp: p})
	c.byKey[key] = el
	c.byID[id] = el
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		e := last.Value.(*cacheEntry)
		delete(c.byKey, e.key)
		delete(c.byID, identityOf(e.key))
	}
	return p, nil
}

// len returns how many programs are cached.
func (c *programCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
