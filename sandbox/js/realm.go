package js

import (
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/dop251/goja"
)

// maxSymbolKeyBytes bounds the registry of Symbol.for symbols of one VM,
// the only store of the engine that outlives a call and grows with what
// scripts do: the keys the VM's calls pass to Symbol.for are counted (each
// call, new key or not: an upper bound) and the VM is dropped after the
// call that passes this budget.
const maxSymbolKeyBytes = 1 << 20

// symbolEntryBytes is what one registry entry costs beyond its key.
const symbolEntryBytes = 64

// hiddenIntrinsicsSource lists the built-in objects that no chain of
// properties from the global object reaches (iterator and generator
// prototypes, the async function prototype, %ThrowTypeError%): they are
// frozen with the rest.
const hiddenIntrinsicsSource = `(function () {
	var P = Object.getPrototypeOf, out = [];
	function add(f) { try { var v = f(); if (v) { out.push(v) } } catch (e) {} }
	add(function () { return P([][Symbol.iterator]()) });
	add(function () { return P(P([][Symbol.iterator]())) });
	add(function () { return P(""[Symbol.iterator]()) });
	add(function () { return P(new Map()[Symbol.iterator]()) });
	add(function () { return P(new Set()[Symbol.iterator]()) });
	add(function () { return P(/a/[Symbol.matchAll]("a")) });
	add(function () { return P(function* () {}) });
	add(function () { return P(function* () {}).prototype });
	add(function () { return P(P(function* () {}).prototype) });
	add(function () { return P(async function () {}) });
	add(function () { return (function () { "use strict"; return Object.getOwnPropertyDescriptor(arguments, "callee").get })() });
	return out;
})()`

// overridable lists the properties of built-in prototypes that scripts
// commonly assign on objects of their own (err.name = ..., o.toString =
// ...); "*" is every property. Frozen as data properties, such an
// assignment would do nothing (or throw in strict code): each becomes an
// accessor whose getter returns the built-in and whose setter defines the
// property on the object assigned to. An assignment to the prototype
// itself does nothing.
var overridable = [...]struct {
	path  []string
	names []string
}{
	{[]string{"Object", "prototype"}, []string{"*"}},
	{[]string{"Function", "prototype"}, []string{"constructor", "toString"}},
	{[]string{"Array", "prototype"}, []string{"constructor", "toString"}},
	{[]string{"Promise", "prototype"}, []string{"constructor"}},
	{[]string{"Error", "prototype"}, []string{"constructor", "name", "message", "toString"}},
	{[]string{"EvalError", "prototype"}, []string{"constructor", "name", "message"}},
	{[]string{"RangeError", "prototype"}, []string{"constructor", "name", "message"}},
	{[]string{"ReferenceError", "prototype"}, []string{"constructor", "name", "message"}},
	{[]string{"SyntaxError", "prototype"}, []string{"constructor", "name", "message"}},
	{[]string{"TypeError", "prototype"}, []string{"constructor", "name", "message"}},
	{[]string{"URIError", "prototype"}, []string{"constructor", "name", "message"}},
}

// prepare builds a realm: a VM with the captured intrinsics, the guarded
// built-ins, UTC dates, the host's clock and random source, and every
// built-in object frozen (SES-style lockdown). Each call on it gets a new
// global object whose prototype is the frozen one (newGlobal).
func (r *Runtime) prepare() (*call, error) {
	vm := goja.New()
	c := &call{vm: vm, rt: r, cancel: noCancel, overrides: map[*goja.Object]goja.Value{}, watchAt: -1}
	c.in = captureIntrinsics(vm)
	vm.SetTimeSource(c.now)
	vm.SetRandSource(c.random)
	if ex := vm.Try(func() {
		c.installGuards()
		c.installUTCDates()
		c.template = vm.GlobalObject()
		c.installGlobalThis()
		roots := c.hiddenIntrinsics()
		c.countNatives(append(roots, c.template)...)
		c.enableOverrides()
		c.deepFreezeAll(append(roots, c.template)...)
	}); ex != nil {
		return nil, fault.Wrap(fault.Internal, ex, "prepare js vm", "")
	}
	return c, nil
}

func noCancel() {}

// now is the VM's clock: the host's, or an error in an expression.
func (c *call) now() time.Time {
	if c.abi == nil {
		panic(c.vm.NewTypeError("an expression has no clock: read the time from a board var"))
	}
	return c.hostNow()
}

// random is the VM's Math.random: the host's, or an error in an
// expression.
func (c *call) random() float64 {
	if c.abi == nil {
		panic(c.vm.NewTypeError("an expression has no random source"))
	}
	return c.hostRandom()
}

// hiddenIntrinsics returns the built-ins hiddenIntrinsicsSource lists.
func (c *call) hiddenIntrinsics() []*goja.Object {
	v, err := c.vm.RunProgram(c.rt.hidden)
	rethrow(err)
	arr, _ := v.(*goja.Object)
	var out []*goja.Object
	for i := int64(0); arr != nil && i < c.arrayLength(arr); i++ {
		if o, ok := arr.Get(strconv.FormatInt(i, 10)).(*goja.Object); ok {
			out = append(out, o)
		}
	}
	return out
}

// enableOverrides turns the overridable properties into accessors.
func (c *call) enableOverrides() {
	for _, o := range overridable {
		home := c.object(o.path...)
		if home == nil {
			continue
		}
		names := o.names
		if len(names) == 1 && names[0] == "*" {
			names = home.GetOwnPropertyNames()
		}
		for _, name := range names {
			c.enableOverride(home, name)
		}
	}
}

func (c *call) enableOverride(home *goja.Object, name string) {
	d, err := c.in.descriptor(goja.Undefined(), home, c.vm.ToValue(name))
	dobj, ok := d.(*goja.Object)
	if err != nil || !ok || dobj.Get("value") == nil || !dobj.Get("writable").ToBoolean() ||
		!dobj.Get("configurable").ToBoolean() {
		return
	}
	value := dobj.Get("value")
	getter := c.native("get "+name, func(goja.FunctionCall) goja.Value { return value }).(*goja.Object)
	setter := c.native("set "+name, func(fc goja.FunctionCall) goja.Value {
		this, ok := fc.This.(*goja.Object)
		if !ok || this == home {
			return goja.Undefined()
		}
		if own, err := c.in.descriptor(goja.Undefined(), this, c.vm.ToValue(name)); err == nil && !goja.IsUndefined(own) {
			_ = this.Set(name, fc.Argument(0))
			return goja.Undefined()
		}
		_ = this.DefineDataProperty(name, fc.Argument(0), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
		return goja.Undefined()
	})
	enumerable := goja.FLAG_FALSE
	if dobj.Get("enumerable").ToBoolean() {
		enumerable = goja.FLAG_TRUE
	}
	if home.DefineAccessorProperty(name, getter, setter, goja.FLAG_TRUE, enumerable) == nil {
		c.overrides[getter] = value
	}
}

// newGlobal gives the call a new, empty global object whose prototype is
// the frozen one: whatever the call defines or assigns at the top level is
// gone with it.
func (c *call) newGlobal() *goja.Object {
	return c.ownGlobal(c.template)
}

// installGlobalThis makes globalThis an accessor of the frozen global
// object that reads the running call's own global object; assigning it
// defines the call's own globalThis, as assigning a writable global does.
func (c *call) installGlobalThis() {
	get := c.native("get globalThis", func(goja.FunctionCall) goja.Value { return c.vm.GlobalObject() })
	set := c.native("set globalThis", func(fc goja.FunctionCall) goja.Value {
		if this, ok := fc.This.(*goja.Object); ok && this != c.template {
			_ = this.DefineDataProperty("globalThis", fc.Argument(0), goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		}
		return goja.Undefined()
	})
	_ = c.template.DefineAccessorProperty("globalThis", get, set, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// guardSymbolRegistry counts what Symbol.for may add to the VM's registry
// (maxSymbolKeyBytes).
func (c *call) guardSymbolRegistry() {
	sym := c.object("Symbol")
	if sym == nil {
		return
	}
	c.wrap(sym, "for", func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		key := c.toStr(fc.Argument(0))
		c.symbolKeyBytes += int64(key.Length())*bytesPerChar + symbolEntryBytes
		return callOrig(orig, fc.This, key)
	})
}

// countNatives replaces every built-in function reachable from roots
// (through own properties' values, getters and setters, and prototypes)
// that is not a constructor with a function of the same name and length
// that passes enterNative and calls it: a recursion through built-ins
// alone is then counted and stops. The same built-in reached twice gets
// the same replacement. Constructors are left alone: called as a getter
// or a method they build from their arguments, not from this.
func (c *call) countNatives(roots ...*goja.Object) {
	made := map[*goja.Object]*goja.Object{}
	counted := func(v goja.Value) (*goja.Object, bool) {
		f, ok := v.(*goja.Object)
		if !ok || c.natives[f] {
			return nil, false
		}
		if w, ok := made[f]; ok {
			return w, true
		}
		orig, ok := goja.AssertFunction(f)
		if !ok {
			return nil, false
		}
		if _, ok := goja.AssertConstructor(f); ok {
			return nil, false
		}
		name := ""
		if n := f.Get("name"); n != nil {
			name = n.String()
		}
		w := c.native(name, func(fc goja.FunctionCall) goja.Value { return callOrig(orig, fc.This, fc.Arguments...) }).(*goja.Object)
		if l := f.Get("length"); l != nil {
			_ = w.DefineDataProperty("length", l, goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		}
		made[f] = w
		return w, true
	}
	flag := func(d *goja.Object, name string) goja.Flag {
		if d.Get(name).ToBoolean() {
			return goja.FLAG_TRUE
		}
		return goja.FLAG_FALSE
	}
	seen := map[*goja.Object]bool{}
	queue := roots
	for len(queue) > 0 {
		o := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if o == nil || seen[o] || made[o] != nil || c.natives[o] {
			continue
		}
		seen[o] = true
		for _, k := range c.ownKeys(o) {
			d, err := c.in.descriptor(goja.Undefined(), o, k)
			dobj, ok := d.(*goja.Object)
			if err != nil || !ok {
				continue
			}
			for _, part := range []string{"value", "get", "set"} {
				if v, ok := dobj.Get(part).(*goja.Object); ok {
					queue = append(queue, v)
				}
			}
			if v := dobj.Get("value"); v != nil {
				if w, ok := counted(v); ok {
					c.defineData(o, k, w, flag(dobj, "writable"), flag(dobj, "enumerable"), flag(dobj, "configurable"))
				}
				continue
			}
			get, gok := counted(dobj.Get("get"))
			set, sok := counted(dobj.Get("set"))
			if gok || sok {
				if !gok {
					get, _ = dobj.Get("get").(*goja.Object)
				}
				if !sok {
					set, _ = dobj.Get("set").(*goja.Object)
				}
				c.defineAccessor(o, k, get, set, flag(dobj, "enumerable"), flag(dobj, "configurable"))
			}
		}
		queue = append(queue, o.Prototype())
	}
}

// deepFreezeAll freezes every object reachable from roots through own
// properties (values, getters and setters) and prototypes.
func (c *call) deepFreezeAll(roots ...*goja.Object) {
	seen := map[*goja.Object]bool{}
	queue := roots
	for len(queue) > 0 {
		o := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if o == nil || seen[o] {
			continue
		}
		seen[o] = true
		keys := make([]goja.Value, 0, 16)
		for _, k := range o.GetOwnPropertyNames() {
			keys = append(keys, c.vm.ToValue(k))
		}
		for _, s := range o.Symbols() {
			keys = append(keys, s)
		}
		for _, k := range keys {
			d, err := c.in.descriptor(goja.Undefined(), o, k)
			if err != nil {
				continue
			}
			if dobj, ok := d.(*goja.Object); ok {
				for _, part := range []string{"value", "get", "set"} {
					if v, ok := dobj.Get(part).(*goja.Object); ok {
						queue = append(queue, v)
					}
				}
			}
		}
		queue = append(queue, o.Prototype())
		c.freeze(o)
	}
}

// intrinsics are built-ins captured before the script (or a guard) can
// replace them; the runner's own code uses only these.
type intrinsics struct {
	parse             goja.Callable // JSON.parse
	stringify         goja.Callable // JSON.stringify
	freeze            goja.Callable // Object.freeze
	preventExtensions goja.Callable // Object.preventExtensions
	construct         goja.Callable // Reflect.construct
	isArray           goja.Callable // Array.isArray
	descriptor        goja.Callable // Object.getOwnPropertyDescriptor
	toString          goja.Callable // String
	errorCtor         *goja.Object  // Error
}

func captureIntrinsics(vm *goja.Runtime) intrinsics {
	obj := func(name string) *goja.Object { return vm.Get(name).ToObject(vm) }
	fn := func(o *goja.Object, name string) goja.Callable {
		f, _ := goja.AssertFunction(o.Get(name))
		return f
	}
	json, object, reflect, array := obj("JSON"), obj("Object"), obj("Reflect"), obj("Array")
	str, _ := goja.AssertFunction(vm.Get("String"))
	return intrinsics{
		parse: fn(json, "parse"), stringify: fn(json, "stringify"), freeze: fn(object, "freeze"),
		preventExtensions: fn(object, "preventExtensions"),
		construct:         fn(reflect, "construct"), isArray: fn(array, "isArray"), errorCtor: obj("Error"),
		descriptor: fn(object, "getOwnPropertyDescriptor"), toString: str,
	}
}

// freeze freezes o (Object.freeze as the VM started).
func (c *call) freeze(o *goja.Object) *goja.Object {
	_, err := c.in.freeze(goja.Undefined(), o)
	rethrow(err)
	return o
}

// Date layouts, as goja formats them, applied in UTC.
const (
	dateTimeLayout       = "Mon Jan 02 2006 15:04:05 GMT-0700 (MST)"
	dateLayout           = "Mon Jan 02 2006"
	timeLayout           = "15:04:05 GMT-0700 (MST)"
	localeDateTimeLayout = "01/02/2006, 15:04:05"
	localeDateLayout     = "01/02/2006"
	localeTimeLayout     = "15:04:05"
)

var (
	// isoDateOnly matches the date-only ISO forms, which JavaScript
	// already reads as UTC.
	isoDateOnly = regexp.MustCompile(`^\s*[+-]?\d{4,6}(-\d\d(-\d\d)?)?\s*$`)
	// hasZone matches a date string that names its offset or zone.
	hasZone = regexp.MustCompile(`(?i)(z|gmt|utc|\but|[+-]\d\d:?\d\d)\s*(\([^)]*\))?\s*$`)
)

// localMethods maps each local-time Date method to its UTC twin.
var localMethods = [...][2]string{
	{"getFullYear", "getUTCFullYear"}, {"getMonth", "getUTCMonth"}, {"getDate", "getUTCDate"},
	{"getDay", "getUTCDay"}, {"getHours", "getUTCHours"}, {"getMinutes", "getUTCMinutes"},
	{"getSeconds", "getUTCSeconds"}, {"getMilliseconds", "getUTCMilliseconds"},
	{"setFullYear", "setUTCFullYear"}, {"setMonth", "setUTCMonth"}, {"setDate", "setUTCDate"},
	{"setHours", "setUTCHours"}, {"setMinutes", "setUTCMinutes"}, {"setSeconds", "setUTCSeconds"},
	{"setMilliseconds", "setUTCMilliseconds"},
}

// installUTCDates makes Date keep and show time in UTC whatever the
// host's time zone: local-time methods are their UTC twins, the string
// forms are formatted in UTC, dates built from parts or parsed from a
// string without a zone are UTC, and getTimezoneOffset is 0.
func (c *call) installUTCDates() {
	date := c.object("Date")
	proto := c.object("Date", "prototype")
	if date == nil || proto == nil {
		return
	}
	for _, m := range localMethods {
		_ = proto.Set(m[0], proto.Get(m[1]))
	}
	getTime, _ := goja.AssertFunction(proto.Get("getTime"))
	format := func(layout string) func(goja.FunctionCall) goja.Value {
		return func(fc goja.FunctionCall) goja.Value {
			ms := callOrig(getTime, fc.This).ToFloat()
			return c.vm.ToValue(formatMillis(ms, layout))
		}
	}
	for _, f := range [...][2]string{
		{"toString", dateTimeLayout}, {"toDateString", dateLayout}, {"toTimeString", timeLayout},
		{"toLocaleString", localeDateTimeLayout}, {"toLocaleDateString", localeDateLayout},
		{"toLocaleTimeString", localeTimeLayout},
	} {
		_ = proto.Set(f[0], c.native(f[0], format(f[1])))
	}
	_ = proto.Set("getTimezoneOffset", c.native("getTimezoneOffset", func(fc goja.FunctionCall) goja.Value {
		if math.IsNaN(callOrig(getTime, fc.This).ToFloat()) {
			return c.vm.ToValue(math.NaN())
		}
		return c.vm.ToValue(0)
	}))
	c.utcDateStatics(date)
}

func formatMillis(ms float64, layout string) string {
	if math.IsNaN(ms) {
		return "Invalid Date"
	}
	return time.UnixMilli(int64(ms)).UTC().Format(layout)
}

// utcDateStatics replaces Date.parse and the Date constructor so that a
// string without a zone, and a date built from parts, are read as UTC.
func (c *call) utcDateStatics(date *goja.Object) {
	origParse, _ := goja.AssertFunction(date.Get("parse"))
	utc, _ := goja.AssertFunction(date.Get("UTC"))
	parse := func(v goja.Value) goja.Value {
		s := c.toStr(v)
		ms := callOrig(origParse, goja.Undefined(), s).ToFloat()
		if math.IsNaN(ms) || isoDateOnly.MatchString(s.String()) || hasZone.MatchString(s.String()) {
			return c.vm.ToValue(ms)
		}
		_, offset := time.UnixMilli(int64(ms)).In(time.Local).Zone()
		return c.vm.ToValue(ms + float64(offset)*1000)
	}
	c.wrap(date, "parse", func(_ goja.Callable, fc goja.FunctionCall) goja.Value { return parse(fc.Argument(0)) })
	c.proxyConstructor("Date",
		func(target *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
			switch {
			case len(args) >= 2:
				args = []goja.Value{callOrig(utc, goja.Undefined(), args...)}
			case len(args) == 1:
				if _, isObj := args[0].(*goja.Object); !isObj {
					if s, ok := args[0].(goja.String); ok {
						args = []goja.Value{parse(s)}
					}
				}
			}
			return c.construct(target, args, newTarget)
		},
		func(target *goja.Object, _ goja.Value, _ []goja.Value) goja.Value {
			now := c.construct(target, nil, target)
			return c.vm.ToValue(formatMillis(now.ToNumber().ToFloat(), dateTimeLayout))
		})
}
