package js

import (
	"slices"
	"strconv"

	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

// The guards here bound what built-ins do to one another, with no
// instruction of the VM's between them: recursion through natives
// (countNatives), prototype cycles and trap lookups through proxies, the
// length a guard read and the one a built-in reads, and the native steps
// that write far more than they read (encoders, collation).

// guardPrototypes refuses a prototype that would close a cycle through a
// proxy. JavaScript refuses a cycle of prototypes only as far as the chain
// has no proxy, and a lookup through a proxy without traps goes on to its
// target and its handler in Go, with no frame of the VM's: an object whose
// prototype is a proxy of itself (Object.setPrototypeOf(t, new Proxy(t,
// {}))) made a lookup recurse until the Go stack overflowed. Setting a
// prototype is the one way to close such a cycle (a proxy's target and
// handler exist before it), so Object.setPrototypeOf, Reflect.setPrototypeOf
// and the __proto__ setter refuse (a TypeError; false from Reflect) when the object would be
// reached again from its new prototype, through prototypes, targets and
// handlers.
func (c *call) guardPrototypes() {
	check := func(o, proto goja.Value) {
		if c.closesCycle(o, proto) {
			panic(c.vm.NewTypeError("Cyclic __proto__ value"))
		}
	}
	c.wrap(c.object("Object"), "setPrototypeOf", func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		check(fc.Argument(0), fc.Argument(1))
		return callOrig(orig, fc.This, fc.Arguments...)
	})
	c.wrap(c.object("Reflect"), "setPrototypeOf", func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		if c.closesCycle(fc.Argument(0), fc.Argument(1)) {
			return c.vm.ToValue(false) // as for a cycle without proxies
		}
		return callOrig(orig, fc.This, fc.Arguments...)
	})
	proto := c.object("Object", "prototype")
	d, err := c.in.descriptor(goja.Undefined(), proto, c.vm.ToValue("__proto__"))
	dobj, ok := d.(*goja.Object)
	if err != nil || !ok {
		return
	}
	set, ok := goja.AssertFunction(dobj.Get("set"))
	if !ok {
		return
	}
	setter := c.native("set __proto__", func(fc goja.FunctionCall) goja.Value {
		check(fc.This, fc.Argument(0))
		return callOrig(set, fc.This, fc.Arguments...)
	})
	_ = proto.DefineAccessorProperty("__proto__", dobj.Get("get"), setter, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// closesCycle reports whether making proto the prototype of o would let a
// lookup on o come back to o: whether o, or the target a proxy o forwards
// to, is reached from proto through prototypes and, for a proxy, its
// target and its handler. It runs no script code (a proxy's
// getPrototypeOf trap is not called) and stops with the call.
func (c *call) closesCycle(o, proto goja.Value) bool {
	obj, ok := o.(*goja.Object)
	start, ok2 := proto.(*goja.Object)
	if !ok || !ok2 {
		return false
	}
	changed := map[*goja.Object]bool{}
	for obj != nil && !changed[obj] {
		changed[obj] = true
		if obj.ExportType() != proxyType {
			break
		}
		obj = obj.Export().(goja.Proxy).Target()
	}
	seen := map[*goja.Object]bool{}
	queue := []*goja.Object{start}
	for len(queue) > 0 {
		n := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if n == nil || seen[n] {
			continue
		}
		if changed[n] {
			return true
		}
		seen[n] = true
		if len(seen)&1023 == 0 {
			c.checkStop()
		}
		if n.ExportType() == proxyType {
			p := n.Export().(goja.Proxy)
			queue = append(queue, p.Target(), p.Handler())
			continue
		}
		queue = append(queue, n.Prototype())
	}
	return false
}

// proxyTraps are the names of a proxy handler's traps.
var proxyTraps = [...]string{"getPrototypeOf", "setPrototypeOf", "isExtensible", "preventExtensions",
	"getOwnPropertyDescriptor", "defineProperty", "has", "get", "set", "deleteProperty", "ownKeys", "apply",
	"construct"}

// guardProxies makes every trap lookup of a proxy pass a native function:
// new Proxy(t, h) and Proxy.revocable(t, h) get, in place of h, an object
// whose prototype is h and whose own traps are getters reading h's. goja
// looks a trap up on the handler in Go, and a handler that is a proxy (or
// inherits from one) looks up its own, so p = new Proxy(p, p) forty times
// made one lookup run 2^40 of them with no instruction of the VM's where a
// stop lands; through the getters each is counted and stops with the call
// (enterNative). A trap still runs with this inheriting from the handler.
func (c *call) guardProxies() {
	ctor := c.object("Proxy")
	if ctor == nil {
		return
	}
	// A proxy of a function without its own defineProperty or
	// deleteProperty trap gets the guarded Reflect's (package fnname): the
	// engine defines and deletes through a proxy (a [[Set]] whose receiver
	// it is, a reviver) where no guarded built-in is called.
	reflect := c.object("Reflect")
	getters, fnGetters := make([]goja.Value, len(proxyTraps)), make([]goja.Value, len(proxyTraps))
	for i, name := range proxyTraps {
		getter := func(fallback goja.Value) goja.Value {
			return c.native("get "+name, func(fc goja.FunctionCall) goja.Value {
				w, ok := fc.This.(*goja.Object)
				if !ok || w.ExportType() == proxyType || w.Prototype() == nil {
					return goja.Undefined()
				}
				if v := w.Prototype().Get(name); v != nil && !goja.IsUndefined(v) && !goja.IsNull(v) || fallback == nil {
					return v
				}
				return fallback
			})
		}
		getters[i] = getter(nil)
		fnGetters[i] = getters[i]
		if name == "defineProperty" || name == "deleteProperty" {
			fnGetters[i] = getter(reflect.Get(name))
		}
	}
	handler := func(args []goja.Value) []goja.Value {
		if len(args) < 2 {
			return args
		}
		h, ok := args[1].(*goja.Object)
		if !ok {
			return args
		}
		w, get := c.vm.CreateObject(h), getters
		if _, fn := goja.AssertFunction(args[0]); fn && args[0].ExportType() != proxyType {
			get = fnGetters // a proxy target has its own
		}
		for i, name := range proxyTraps {
			_ = w.DefineAccessorProperty(name, get[i], goja.Undefined(), goja.FLAG_TRUE, goja.FLAG_FALSE)
		}
		return append([]goja.Value{args[0], w}, args[2:]...)
	}
	c.wrap(ctor, "revocable", func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		return callOrig(orig, fc.This, handler(fc.Arguments)...)
	})
	c.proxyConstructor("Proxy",
		func(target *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
			return c.construct(target, handler(args), newTarget)
		},
		func(target *goja.Object, this goja.Value, args []goja.Value) goja.Value {
			f, _ := goja.AssertFunction(target)
			return callOrig(f, this, args...)
		})
}

// pinLength reads the length of the array-like v once, as a generic
// array method would, and returns it with the value to hand the method:
// v itself when reading its length runs no script code (a string, an
// array, an object whose length is a data property, own or inherited,
// with no proxy on the way), else a proxy of v whose length is the one
// read, forwarding every other read to v. A guard that checked the length
// and then let the built-in read it again would otherwise check one
// length and let the built-in loop over another: a getter that answers 0
// and then 2^32 - 1 took Math.max.apply and sort to a fatal out of
// memory, and indexOf, fill or slice to minutes of uninterruptible loop.
func (c *call) pinLength(v goja.Value) (goja.Value, int64) {
	o, ok := v.(*goja.Object)
	if !ok {
		if isNullish(v) {
			return v, 0
		}
		return v, c.thisLength(v)
	}
	if c.plainLength(o) {
		return o, c.arrayLength(o)
	}
	n := c.arrayLength(o)
	length := c.vm.ToValue(n)
	p := c.vm.NewProxy(o, &goja.ProxyTrapConfig{
		Get: func(t *goja.Object, k string, _ goja.Value) goja.Value {
			if k == "length" {
				return length
			}
			return t.Get(k)
		},
		GetIdx: func(t *goja.Object, i int, _ goja.Value) goja.Value { return t.Get(strconv.Itoa(i)) },
		GetSym: func(t *goja.Object, s *goja.Symbol, _ goja.Value) goja.Value { return t.GetSymbol(s) },
	})
	return c.vm.ToValue(p), n
}

// plainLength reports whether reading o's length runs no script code: no
// proxy on o's prototype chain up to the first object that has a length
// of its own, and that length a data property.
func (c *call) plainLength(o *goja.Object) bool {
	for n := 0; o != nil; n++ {
		if o.ExportType() == proxyType || n > 64 {
			return false
		}
		d, err := c.in.descriptor(goja.Undefined(), o, c.vm.ToValue("length"))
		if err != nil {
			return false
		}
		if dobj, ok := d.(*goja.Object); ok {
			g := dobj.Get("get")
			return g == nil || goja.IsUndefined(g)
		}
		o = o.Prototype()
	}
	return true
}

// unpin maps a built-in's result that is the proxy pinLength made back to
// the object it stands for (fill, reverse, sort and copyWithin return
// their this).
func unpin(res, pinned, orig goja.Value) goja.Value {
	if pinned != orig && res == pinned {
		return orig
	}
	return res
}

// ownKeys lists o's own property keys, strings and symbols.
func (c *call) ownKeys(o *goja.Object) []goja.Value {
	keys := make([]goja.Value, 0, 16)
	for _, k := range o.GetOwnPropertyNames() {
		keys = append(keys, c.vm.ToValue(k))
	}
	for _, s := range o.Symbols() {
		keys = append(keys, s)
	}
	return keys
}

func (c *call) defineData(o *goja.Object, k, v goja.Value, w, e, cf goja.Flag) {
	if s, ok := k.(*goja.Symbol); ok {
		_ = o.DefineDataPropertySymbol(s, v, w, cf, e)
		return
	}
	_ = o.DefineDataProperty(k.String(), v, w, cf, e)
}

func (c *call) defineAccessor(o *goja.Object, k goja.Value, get, set *goja.Object, e, cf goja.Flag) {
	var g, s goja.Value = goja.Undefined(), goja.Undefined()
	if get != nil {
		g = get
	}
	if set != nil {
		s = set
	}
	if sym, ok := k.(*goja.Symbol); ok {
		_ = o.DefineAccessorPropertySymbol(sym, g, s, cf, e)
		return
	}
	_ = o.DefineAccessorProperty(k.String(), g, s, cf, e)
}

func (c *call) arrayFrom(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	args := fc.Arguments
	if o, ok := fc.Argument(0).(*goja.Object); ok {
		if _, iterable := goja.AssertFunction(o.GetSymbol(goja.SymIterator)); !iterable {
			v, n := c.pinLength(o)
			c.needElements(n)
			args = append([]goja.Value{v}, args[1:]...)
		}
	}
	return callOrig(orig, fc.This, args...)
}

// argsGuard bounds a call that spreads an array-like argument (argument
// number i) into an argument list.
func (c *call) argsGuard(i int) guardFunc {
	return func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		args := fc.Arguments
		if o, ok := fc.Argument(i).(*goja.Object); ok {
			v, n := c.pinLength(o)
			c.needElements(n)
			args = slices.Clone(args)
			args[i] = v
		}
		return callOrig(orig, fc.This, args...)
	}
}

// spreadable reports whether concat spreads v (an array, or an object with
// Symbol.isConcatSpreadable true).
func (c *call) spreadable(v goja.Value) (*goja.Object, bool) {
	o, ok := v.(*goja.Object)
	if !ok {
		return nil, false
	}
	if s := o.GetSymbol(goja.SymIsConcatSpreadable); s != nil && !goja.IsUndefined(s) {
		return o, s.ToBoolean()
	}
	return o, c.isArray(o)
}

// concatArrays, flat and flatMap are Array.prototype's, written here so
// that each source's length is read once, counted against the budget
// before its elements are copied, and the copying stops with the call:
// goja's read the length of each source when it came to it, after the
// getters of the sources before it had run, and copied in one step (a
// getter that set a later array's length to 2^31 held concat for
// minutes; a flatMap callback returning such an array too).
func (c *call) concatArrays(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if isNullish(fc.This) {
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	o := fc.This.ToObject(c.vm)
	out := c.speciesArray(o)
	n := int64(0)
	for _, e := range append([]goja.Value{o}, fc.Arguments...) {
		src, ok := c.spreadable(e)
		if !ok {
			c.needElements(n + 1)
			c.createData(out, n, e)
			n++
			continue
		}
		l := c.arrayLength(src)
		c.needElements(n + l)
		for k := int64(0); k < l; k++ {
			if k&1023 == 1023 {
				c.checkStop()
			}
			if v := src.Get(strconv.FormatInt(k, 10)); v != nil {
				c.createData(out, n+k, v)
			}
		}
		n += l
	}
	rethrow(out.Set("length", n))
	return out
}

func (c *call) flat(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if isNullish(fc.This) {
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	o := fc.This.ToObject(c.vm)
	l := c.arrayLength(o)
	depth := float64(1)
	if a := fc.Argument(0); !goja.IsUndefined(a) {
		if depth = a.ToNumber().ToFloat(); depth != depth {
			depth = 0
		}
	}
	depth = max(min(depth, float64(c.maxNesting())), 0)
	out := c.speciesArray(o)
	c.flattenInto(out, o, l, 0, int(depth), nil, nil, 0)
	return out
}

func (c *call) flatMap(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if isNullish(fc.This) {
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	o := fc.This.ToObject(c.vm)
	l := c.arrayLength(o)
	mapper, ok := goja.AssertFunction(fc.Argument(0))
	if !ok {
		panic(c.vm.NewTypeError("flatMap mapper function is not callable"))
	}
	out := c.speciesArray(o)
	c.flattenInto(out, o, l, 0, 1, mapper, fc.Argument(1), 0)
	return out
}

// flattenInto is FlattenIntoArray: it copies source's elements (mapped
// when mapper is set) into target from index start, flattening arrays
// depth levels deep, and returns the next index. A source's length is
// counted as elements the loop visits.
func (c *call) flattenInto(target, source *goja.Object, sourceLen, start int64, depth int,
	mapper goja.Callable, thisArg goja.Value, level int) int64 {
	if level > c.maxNesting() {
		c.abort(c.limitError(sandbox.LimitStack))
	}
	c.needElements(sourceLen)
	t := start
	for i := int64(0); i < sourceLen; i++ {
		if i&1023 == 1023 {
			c.checkStop()
		}
		v := source.Get(strconv.FormatInt(i, 10))
		if v == nil {
			continue
		}
		if mapper != nil {
			v = callOrig(mapper, thisArg, v, c.vm.ToValue(i), source)
		}
		if sub, ok := v.(*goja.Object); ok && depth > 0 && c.isArray(sub) {
			t = c.flattenInto(target, sub, c.arrayLength(sub), t, depth-1, nil, nil, level+1)
			continue
		}
		c.needElements(t + 1)
		c.createData(target, t, v)
		t++
	}
	return t
}

// speciesArray is ArraySpeciesCreate(o, 0): an empty array made by the
// Symbol.species of o's constructor when o is an array and that is
// another constructor than Array, else a new Array.
func (c *call) speciesArray(o *goja.Object) *goja.Object {
	if !c.isArray(o) {
		return c.vm.NewArray()
	}
	ctor := o.Get("constructor")
	if co, ok := ctor.(*goja.Object); ok {
		ctor = co.GetSymbol(goja.SymSpecies)
	}
	if ctor == nil || goja.IsUndefined(ctor) || goja.IsNull(ctor) {
		return c.vm.NewArray()
	}
	co, ok := ctor.(*goja.Object)
	if _, isCtor := goja.AssertConstructor(ctor); !ok || !isCtor {
		panic(c.vm.NewTypeError("object.constructor[Symbol.species] is not a constructor"))
	}
	if co == c.object("Array") {
		return c.vm.NewArray()
	}
	return c.construct(co, []goja.Value{c.vm.ToValue(0)}, co)
}

// createData is CreateDataPropertyOrThrow(o, i, v).
func (c *call) createData(o *goja.Object, i int64, v goja.Value) {
	rethrow(o.DefineDataProperty(strconv.FormatInt(i, 10), v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE))
}
