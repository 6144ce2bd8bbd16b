package js

import (
	"math"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js/internal/bigop"
	"github.com/corral-rt/corral/sandbox/js/internal/fnname"
	"github.com/corral-rt/corral/sandbox/js/jsscan"
	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// Cost model of the memory guard's checks, in bytes.
const (
	bytesPerChar    = 2  // a string's UTF-16 code unit, at worst
	bytesPerElement = 16 // an array slot (an interface value)
	bytesPerPart    = 48 // one string a split or a key listing makes
	// bytesPerStringProp is what copying one character of a string into
	// an object property costs (object spread, for-in, Object.keys of a
	// string): measured at about 220 bytes.
	bytesPerStringProp = 256
	// bytesPerJSONByte is what one byte of JSON text parses into, about.
	bytesPerJSONByte = 16
	// bytesPerCollatedChar is what comparing one character by locale
	// (String.prototype.localeCompare) allocates: measured at about 16.
	bytesPerCollatedChar = 32
	// sortsPerElement makes a sort without a comparator (which compares
	// strings, in one step the VM cannot interrupt) count each element
	// this many times against the element budget.
	sortsPerElement = 16
)

// guardFunc is the body of a guarded built-in: it gets the original.
type guardFunc = func(orig goja.Callable, fc goja.FunctionCall) goja.Value

// installGuards replaces the built-ins that can allocate without bound, or
// loop in Go without bound, with versions that check the call's memory
// budget first; see docs/sandbox.md for the list and what it holds.
func (c *call) installGuards() {
	c.guardStrings()
	c.guardJoins()
	c.guardArrays()
	c.guardObjects()
	if err := fnname.Install(c.vm, c.wrap); err != nil {
		panic(err) // a bug: what it wraps are the language's own
	}
	c.guardPrototypes()
	c.guardProxies()
	c.wrap(c.object("String", "prototype"), "localeCompare", c.localeCompare)
	c.guardEncoders()
	c.guardBuffers()
	c.guardRegexp()
	c.guardRegexpSymbols()
	c.guardJSON()
	c.guardCode()
	c.guardSymbolRegistry()
	c.guardBigInt()
}

// wrap replaces the method name of obj with g (the property keeps its
// attributes). A missing method is left alone.
func (c *call) wrap(obj *goja.Object, name string, g guardFunc) {
	orig, ok := goja.AssertFunction(obj.Get(name))
	if !ok {
		return
	}
	_ = obj.Set(name, c.native(name, func(fc goja.FunctionCall) goja.Value { return g(orig, fc) }))
}

// wrapConstructor replaces the global constructor name with a proxy whose
// construct and call traps run check on the arguments first.
func (c *call) wrapConstructor(name string, check func(args []goja.Value)) {
	c.proxyConstructor(name,
		func(target *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
			c.checkStop()
			check(args)
			return c.construct(target, args, newTarget)
		},
		func(target *goja.Object, this goja.Value, args []goja.Value) goja.Value {
			c.checkStop()
			check(args)
			f, _ := goja.AssertFunction(target)
			return callOrig(f, this, args...)
		})
}

// construct is Reflect.construct(target, args, newTarget).
func (c *call) construct(target *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
	v, err := c.in.construct(goja.Undefined(), target, c.vm.NewArray(toAny(args)...), newTarget)
	rethrow(err)
	return v.(*goja.Object)
}

// proxyConstructor replaces the global constructor name with a proxy with
// the given construct and call traps. The proxy keeps the original's
// prototype, statics, instanceof and subclassing; the prototype's
// constructor property points at the proxy.
func (c *call) proxyConstructor(name string,
	construct func(target *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object,
	apply func(target *goja.Object, this goja.Value, args []goja.Value) goja.Value,
) {
	orig, ok := c.vm.Get(name).(*goja.Object)
	if !ok {
		return
	}
	p := c.vm.NewProxy(orig, &goja.ProxyTrapConfig{Construct: construct, Apply: apply})
	pv := c.vm.ToValue(p)
	_ = c.vm.GlobalObject().DefineDataProperty(name, pv, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	if proto, ok := orig.Get("prototype").(*goja.Object); ok {
		_ = proto.DefineDataProperty("constructor", pv, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	// goja's proxy has no instanceof of its own (x instanceof P threw "Expecting a
	// function in instanceof check"): the original answers it, for the
	// proxy and for a class that extends it, as the language's ordinary
	// instanceof does.
	_ = orig.DefineDataPropertySymbol(goja.SymHasInstance, c.native("[Symbol.hasInstance]", c.hasInstance),
		goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
}

func toAny(vs []goja.Value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// call calls orig with this and args and rethrows what it throws.
func callOrig(orig goja.Callable, this goja.Value, args ...goja.Value) goja.Value {
	v, err := orig(this, args...)
	rethrow(err)
	return v
}

// budget is the call's memory budget in bytes.
func (c *call) budget() int64 { return c.limits.MemoryBytes }

// maxElements is how many array slots fit in the budget.
func (c *call) maxElements() int64 { return max(1024, c.budget()/bytesPerElement) }

// need stops the call when an allocation of bytes would not fit in the
// budget (NaN, from a NaN size, counts as nothing).
func (c *call) need(bytes float64) {
	if bytes > float64(c.budget()) {
		c.abort(c.limitError(sandbox.LimitMemory))
	}
}

// needElements stops the call when a native loop over n elements would
// not fit in the budget.
func (c *call) needElements(n int64) {
	if n > c.maxElements() {
		c.abort(c.limitError(sandbox.LimitMemory))
	}
}

// arrayLength reads ToLength(o.length).
func (c *call) arrayLength(o *goja.Object) int64 {
	v := o.Get("length")
	if v == nil {
		return 0
	}
	f := v.ToFloat()
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0
	case f > math.MaxInt64/2:
		return math.MaxInt64 / 2
	}
	return int64(f)
}

// object returns the object at path from the global object ("Array",
// "prototype"), or nil.
func (c *call) object(path ...string) *goja.Object {
	var v goja.Value = c.vm.GlobalObject()
	for _, p := range path {
		o, ok := v.(*goja.Object)
		if !ok {
			return nil
		}
		v = o.Get(p)
	}
	o, _ := v.(*goja.Object)
	return o
}

// iteratorProto returns the prototype of the iterator v[Symbol.iterator]()
// returns (%ArrayIteratorPrototype% for an array), or nil.
func (c *call) iteratorProto(v goja.Value) *goja.Object {
	fn, ok := goja.AssertFunction(v.ToObject(c.vm).GetSymbol(goja.SymIterator))
	if !ok {
		return nil
	}
	it, err := fn(v)
	if err != nil {
		return nil
	}
	o, ok := it.(*goja.Object)
	if !ok {
		return nil
	}
	return o.Prototype()
}

// toStr converts v to a string once, as String(v) does (a string
// primitive as it is; a symbol throws a TypeError as in a template).
func (c *call) toStr(v goja.Value) goja.String {
	if s, ok := v.(goja.String); ok {
		return s
	}
	if v == nil {
		v = goja.Undefined()
	}
	if _, ok := v.(*goja.Symbol); ok {
		panic(c.vm.NewTypeError("Cannot convert a Symbol value to a string"))
	}
	r, err := c.in.toString(goja.Undefined(), v)
	rethrow(err)
	s, _ := r.(goja.String)
	return s
}

// stringSource stops the call when v is a string (or String object) long
// enough that copying its characters into properties would not fit the
// budget (Object.keys("..."), {..."..."}, for (k in "...")).
func (c *call) stringSource(v goja.Value) {
	var n int64
	switch t := v.(type) {
	case goja.String:
		n = int64(t.Length())
	case *goja.Object:
		if t.ClassName() == "String" {
			n = c.arrayLength(t)
		}
	}
	c.need(float64(n) * bytesPerStringProp)
}

// guardObjects bounds the Object and Reflect functions that list or copy
// every own property of their argument.
func (c *call) guardObjects() {
	sources := func(from int) guardFunc {
		return func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
			for i := from; i < len(fc.Arguments); i++ {
				c.stringSource(fc.Arguments[i])
			}
			return callOrig(orig, fc.This, fc.Arguments...)
		}
	}
	object := c.object("Object")
	for _, name := range []string{"keys", "values", "entries", "getOwnPropertyNames", "getOwnPropertyDescriptors"} {
		c.wrap(object, name, sources(0))
	}
	c.wrap(object, "assign", sources(1))
	c.wrap(object, "defineProperties", sources(1))
	c.wrap(object, "create", sources(1))
	c.wrap(c.object("Reflect"), "ownKeys", sources(0))
	guard := c.native("", func(fc goja.FunctionCall) goja.Value {
		c.stringSource(fc.Argument(0))
		return fc.Argument(0)
	})
	c.guards[0] = guard
	_ = c.vm.GlobalObject().DefineDataProperty(spreadGuard, guard, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	arrays := c.native("", func(fc goja.FunctionCall) goja.Value {
		if o, ok := fc.Argument(0).(*goja.Object); ok && c.isArray(o) {
			c.needElements(c.arrayLength(o))
		}
		return fc.Argument(0)
	})
	c.guards[1] = arrays
	_ = c.vm.GlobalObject().DefineDataProperty(arraySpreadGuard, arrays, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
}

// ownGlobal makes a new global object inheriting from proto and makes it
// the VM's. The compiled code finds the spread guards by name through the
// global object, so they are its own properties too, read-only and fixed:
// a call cannot hide them behind a property of its own global object
// (Object.defineProperty(globalThis, ...)), nor can a var of that name.
func (c *call) ownGlobal(proto *goja.Object) *goja.Object {
	global := c.vm.CreateObject(proto)
	_ = global.DefineDataProperty(spreadGuard, c.guards[0], goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	_ = global.DefineDataProperty(arraySpreadGuard, c.guards[1], goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	_ = global.DefineDataProperty(bigop.Global, c.guards[2], goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	c.vm.SetGlobalObject(global)
	return global
}

// typedArrays are the constructors whose first argument sets a size in
// elements that is allocated at once.
var typedArrays = [...]string{
	"Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
	"Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array",
}

// guardBuffers bounds ArrayBuffer and the typed array constructors, and
// typed-array joins.
func (c *call) guardBuffers() {
	for _, name := range typedArrays {
		ctor := c.object(name)
		if ctor == nil {
			continue
		}
		bpe := float64(ctor.Get("BYTES_PER_ELEMENT").ToInteger())
		c.wrapConstructor(name, c.bufferCheck(bpe))
	}
	c.wrapConstructor("ArrayBuffer", c.bufferCheck(1))
	if p := c.object("Uint8Array", "prototype"); p != nil {
		if tp := p.Prototype(); tp != nil {
			for _, name := range []string{"join", "toLocaleString"} {
				c.wrap(tp, name, c.typedJoin)
			}
		}
	}
}

func (c *call) bufferCheck(bytesPer float64) func([]goja.Value) {
	return func(args []goja.Value) {
		if len(args) == 0 || isNullish(args[0]) {
			return
		}
		if o, ok := args[0].(*goja.Object); ok {
			if o.ClassName() != "ArrayBuffer" {
				v, n := c.pinLength(o)
				c.need(float64(n) * bytesPer)
				args[0] = v
			}
			return
		}
		if f := args[0].ToFloat(); !math.IsNaN(f) {
			c.need(f * bytesPer)
		}
	}
}

func (c *call) typedJoin(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	n := c.thisLength(fc.This)
	sep := 1.0
	if a := fc.Argument(0); !goja.IsUndefined(a) {
		sep = float64(c.toStr(a).Length())
	}
	// A number prints in at most 24 characters.
	c.need(float64(n) * (24 + sep) * bytesPerChar)
	return callOrig(orig, fc.This, fc.Arguments...)
}

// refuseSource stops the call with a Validation error: the scan refused
// a source (code made at run time, a regular expression) that would take
// goja or regexp2 too deep. It names where the script made it.
func (c *call) refuseSource(what string, err error) {
	at := ""
	if fs := c.vm.CaptureCallStack(1, nil); len(fs) > 0 {
		at = " at " + c.position(fs[0])
	}
	c.abort(fault.Wrap(fault.Validation, err, c.op.String(), "%s%s", what, at))
}

// checkPattern refuses a regular expression made from v (new RegExp(v),
// "s".match(v)) when its pattern is too large or nests too deep for
// regexp2, whose compiler recurses once per group.
func (c *call) checkPattern(v goja.Value) {
	if isNullish(v) {
		return
	}
	if o, ok := v.(*goja.Object); ok && o.ClassName() == "RegExp" {
		return // checked when it was made
	}
	if err := jsscan.Pattern(c.toStr(v).String()); err != nil {
		c.refuseSource("a regular expression", err)
	}
}

// guardCode routes code a script makes at run time (eval, the Function
// constructor) through the same compiler as node scripts: source maps off,
// with statements refused, spreads guarded. eval is indirect eval (it runs
// in the global scope). The async and generator function constructors
// refuse.
func (c *call) guardCode() {
	c.vm.SetParserOptions(parser.WithDisableSourceMaps)
	eval := c.native("eval", func(fc goja.FunctionCall) goja.Value {
		src, ok := fc.Argument(0).(goja.String)
		if !ok {
			return fc.Argument(0)
		}
		return c.runCode("eval", src.String())
	})
	_ = c.vm.GlobalObject().DefineDataProperty("eval", eval, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	c.proxyConstructor("Function",
		func(_ *goja.Object, args []goja.Value, _ *goja.Object) *goja.Object {
			return c.makeFunction(args).(*goja.Object)
		},
		func(_ *goja.Object, _ goja.Value, args []goja.Value) goja.Value { return c.makeFunction(args) })
	c.refuseDynamicKinds()
}

// makeFunction is new Function(p1, ..., body). The source it builds is
// counted against the budget before it is built: the arguments, each
// converted once in order, can be one long string many times over
// (Function(...Array(4096).fill(s))), and joining them is one step no
// interrupt reaches.
func (c *call) makeFunction(args []goja.Value) goja.Value {
	strs := make([]goja.String, len(args))
	total := float64(len("(function anonymous(\n) {\n\n})") + len(args))
	for i, a := range args {
		strs[i] = c.toStr(a)
		total += float64(strs[i].Length())
	}
	c.need(total * bytesPerChar)
	params, body := make([]string, len(args)), ""
	for i, s := range strs {
		params[i] = s.String()
	}
	if len(params) > 0 {
		body, params = params[len(params)-1], params[:len(params)-1]
	}
	src := "(function anonymous(" + strings.Join(params, ",") + "\n) {\n" + body + "\n})"
	return c.runCode("anonymous", src)
}

// refuseDynamicKinds replaces the constructor of async, generator and
// async generator functions (reachable only as the constructor property
// of their prototypes) with a function that throws.
func (c *call) refuseDynamicKinds() {
	refuse := c.native("", func(goja.FunctionCall) goja.Value {
		panic(c.vm.NewTypeError("creating async or generator functions from strings is not supported"))
	})
	for _, p := range c.rt.kinds {
		v, err := c.vm.RunProgram(p)
		if err != nil {
			continue
		}
		if f, ok := v.(*goja.Object); ok && f.Prototype() != nil {
			_ = f.Prototype().DefineDataProperty("constructor", refuse, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		}
	}
}

// guardBigInt installs the helper that rewritten BigInt operators call
// (package bigop) and bounds the BigInt built-ins whose work a count sets:
// BigInt of a long string (parsed in time that grows with the square of
// its digits), BigInt.asIntN and asUintN (which build 2 to the power of
// their first argument).
func (c *call) guardBigInt() {
	refuse := func() { c.abort(c.limitError(sandbox.LimitMemory)) }
	maxBits := func() int64 { return bigop.MaxBits(c.budget()) }
	maxChars := func() int64 { return c.budget() / bytesPerChar }
	h, err := bigop.Install(c.vm, maxBits, maxChars, refuse)
	if err != nil {
		panic(err) // a bug: the helper is fixed source
	}
	c.guards[2] = h
	_ = c.vm.GlobalObject().DefineDataProperty(bigop.Global, h, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	c.wrapConstructor("BigInt", func(args []goja.Value) {
		c.bigSource()
		if len(args) > 0 {
			if s, ok := args[0].(goja.String); ok && int64(s.Length()) > maxBits()/4 {
				refuse()
			}
		}
	})
	sources := func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		c.bigSource()
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	for _, name := range []string{"BigInt64Array", "BigUint64Array"} {
		c.wrapConstructor(name, func([]goja.Value) { c.bigSource() })
	}
	c.wrap(c.object("DataView", "prototype"), "getBigInt64", sources)
	c.wrap(c.object("DataView", "prototype"), "getBigUint64", sources)
	bits := func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		c.bigSource()
		// Converted once: a valueOf that answered 1 to the check and 2^34
		// to the built-in made it build 4 GiB.
		n := fc.Argument(0).ToNumber()
		if n.ToFloat() > float64(maxBits()) {
			refuse()
		}
		return callOrig(orig, fc.This, append([]goja.Value{n}, fc.Arguments[min(1, len(fc.Arguments)):]...)...)
	}
	c.wrap(c.object("BigInt"), "asIntN", bits)
	c.wrap(c.object("BigInt"), "asUintN", bits)
}

// bigSource throws a TypeError unless the running call may make BigInts:
// only a program that names BigInt or holds a BigInt literal
// (compiled.bigint) is compiled with its BigInt operators bounded, so a
// call of another makes none, and no BigInt reaches its operators.
func (c *call) bigSource() {
	if !c.bigOK {
		panic(c.vm.NewTypeError("BigInt is available to a script or expression that names BigInt or " +
			"holds a BigInt literal (see docs/sandbox.md)"))
	}
}
