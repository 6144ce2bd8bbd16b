package js

import (
	"strconv"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

// guardJSON bounds JSON.parse (nesting) and JSON.stringify (output size,
// nesting).
func (c *call) guardJSON() {
	json := c.object("JSON")
	c.wrap(json, "parse", c.parseJSON)
	c.wrap(json, "stringify", func(_ goja.Callable, fc goja.FunctionCall) goja.Value {
		return c.stringify(fc.Argument(0), fc.Argument(1), fc.Argument(2), c.budget(), sandbox.LimitMemory)
	})
}

// maxNesting is how deep JSON text, JSON values, joined arrays and
// flattened arrays may nest, as a multiple of the stack-depth limit: the
// built-ins that walk them recurse on the Go stack, out of reach of the
// VM's own stack limit.
const nestingPerFrame = 16

func (c *call) maxNesting() int { return nestingPerFrame * c.limits.StackDepth }

// jsonBudget counts the bytes JSON.stringify is producing, through a
// replacer function it installs, and stops the call when they pass max.
type jsonBudget struct {
	c     *call
	max   int64
	limit string
	n     int64
	gap   int64
	depth map[*goja.Object]int
	user  goja.Callable // the script's replacer function, if any
	keys  []string      // the script's property list, if any
	num   []byte
}

// stringify is JSON.stringify(value, replacer, space) with a byte budget:
// output past max bytes, or nesting past maxNesting, stops the call with
// limit (memory_bytes for the script's own JSON.stringify,
// max_value_bytes for a value crossing to the host).
func (c *call) stringify(value, replacer, space goja.Value, max int64, limit string) goja.Value {
	b := &jsonBudget{c: c, max: max, limit: limit, depth: map[*goja.Object]int{}}
	b.gap = gapLen(space)
	if r, ok := replacer.(*goja.Object); ok {
		if f, ok := goja.AssertFunction(r); ok {
			b.user = f
		} else if c.isArray(r) {
			b.keys = c.propertyList(r)
		}
	}
	fn := c.vm.ToValue(b.replace)
	if space == nil {
		space = goja.Undefined()
	}
	out, err := c.in.stringify(goja.Undefined(), value, fn, space)
	rethrow(err)
	if s, ok := out.(goja.String); ok && int64(s.Length()) > max {
		c.abort(c.limitError(limit))
	}
	return out
}

func gapLen(space goja.Value) int64 {
	if space == nil || goja.IsUndefined(space) || goja.IsNull(space) {
		return 0
	}
	if s, ok := space.(goja.String); ok {
		return int64(min(s.Length(), 10))
	}
	if o, ok := space.(*goja.Object); ok && (o.ClassName() == "String") {
		return int64(min(len(o.String()), 10))
	}
	n := space.ToInteger()
	return max(0, min(n, 10))
}

// propertyList reads an array replacer into its list of keys.
func (c *call) propertyList(arr *goja.Object) []string {
	n := c.arrayLength(arr)
	seen := make(map[string]bool)
	var keys []string
	for i := int64(0); i < n; i++ {
		v := arr.Get(strconv.FormatInt(i, 10))
		if !isPropertyKey(v) {
			continue
		}
		k := v.String()
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

func isPropertyKey(v goja.Value) bool {
	switch t := v.(type) {
	case nil:
		return false
	case goja.String:
		return true
	case *goja.Object:
		cls := t.ClassName()
		return cls == "String" || cls == "Number"
	}
	return isNumber(v)
}

func isNumber(v goja.Value) bool {
	switch v.Export().(type) {
	case int64, float64:
		return true
	}
	return false
}

// replace is the replacer JSON.stringify calls for every value.
func (b *jsonBudget) replace(fc goja.FunctionCall) goja.Value {
	c := b.c
	c.checkStop()
	holder, _ := fc.This.(*goja.Object)
	key, val := fc.Argument(0), fc.Argument(1)
	if b.user != nil {
		v, err := b.user(fc.This, key, val)
		rethrow(err)
		val = v
	}
	depth := b.depth[holder]
	obj, isObj := val.(*goja.Object)
	if isObj && b.keys != nil && !c.isArray(obj) && !isBoxed(obj) {
		if _, callable := goja.AssertFunction(obj); !callable {
			obj = b.project(obj)
			val = obj
		}
	}
	b.count(holder, key, val, depth)
	if isObj {
		if _, callable := goja.AssertFunction(obj); !callable && !isBoxed(obj) {
			if depth+1 > c.maxNesting() {
				c.abort(c.limitError(sandbox.LimitStack))
			}
			b.depth[obj] = depth + 1
		}
	}
	if b.n > b.max {
		c.abort(c.limitError(b.limit))
	}
	return val
}

func isBoxed(o *goja.Object) bool {
	switch o.ClassName() {
	case "String", "Number", "Boolean", "BigInt":
		return true
	}
	return false
}

// project returns a new object with only the property list's keys of o,
// in the list's order.
func (b *jsonBudget) project(o *goja.Object) *goja.Object {
	out := b.c.vm.NewObject()
	for _, k := range b.keys {
		if v := o.Get(k); v != nil {
			_ = out.DefineDataProperty(k, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
		}
	}
	return out
}

// count adds the bytes val will take in the output.
func (b *jsonBudget) count(holder *goja.Object, key, val goja.Value, depth int) {
	inArray := holder != nil && holder.ClassName() == "Array"
	if val == nil || goja.IsUndefined(val) {
		if inArray {
			b.n += 5 // null,
		}
		return
	}
	if o, ok := val.(*goja.Object); ok {
		if _, callable := goja.AssertFunction(o); callable {
			if inArray {
				b.n += 5
			}
			return
		}
	}
	if !inArray {
		b.n += jsonQuotedLen(key.String()) + 2 // "key": and a comma
	} else {
		b.n++
	}
	if b.gap > 0 {
		b.n += 1 + b.gap*int64(depth+1)
	}
	b.n += b.valueLen(val)
}

func (b *jsonBudget) valueLen(val goja.Value) int64 {
	switch t := val.(type) {
	case goja.String:
		return jsonQuotedLen(t.String())
	case *goja.Object:
		if isBoxed(t) {
			return jsonQuotedLen(t.String())
		}
		return 2
	}
	switch e := val.Export().(type) {
	case bool:
		return 5
	case int64:
		b.num = strconv.AppendInt(b.num[:0], e, 10)
		return int64(len(b.num))
	case float64:
		b.num = strconv.AppendFloat(b.num[:0], e, 'g', -1, 64)
		return int64(len(b.num))
	}
	return 4 // null
}

// jsonQuotedLen is the length of s as a JSON string, quotes included.
func jsonQuotedLen(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '"' || ch == '\\' || ch == '\n' || ch == '\r' || ch == '\t' || ch == '\b' || ch == '\f':
			n += 2
		case ch < 0x20:
			n += 6
		default:
			n++
		}
	}
	return n
}

// parseJSON is JSON.parse with checks first: text longer than the budget
// allows for what it parses into (bytesPerJSONByte per byte) stops the
// call, as does text nested deeper than maxNesting (the parser recurses
// on the Go stack). The parser is one step the VM cannot interrupt.
func (c *call) parseJSON(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	text := c.toStr(fc.Argument(0))
	c.need(float64(text.Length()) * bytesPerJSONByte)
	if jsonDepth(text.String()) > c.maxNesting() {
		c.abort(c.limitError(sandbox.LimitStack))
	}
	out, err := orig(goja.Undefined(), text, fc.Argument(1))
	rethrow(err)
	return out
}

// jsonDepth returns the deepest nesting of [ and { in s outside strings.
func jsonDepth(s string) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case inString && ch == '\\':
			i++
		case ch == '"':
			inString = !inString
		case inString:
		case ch == '[' || ch == '{':
			depth++
			deepest = max(deepest, depth)
		case ch == ']' || ch == '}':
			depth--
		}
	}
	return deepest
}

// guardRegexp routes every regular-expression operation through a guarded
// exec or test (replacing exec turns off the engine's shortcuts, which do
// not call it). A match of a backtracking pattern that ran past
// RegexpMatchTimeout reports no match inside the regexp engine; the guard
// turns that into a stop.
func (c *call) guardRegexp() {
	proto := c.object("RegExp", "prototype")
	for _, name := range []string{"exec", "test"} {
		c.wrap(proto, name, c.timedMatch)
	}
	c.wrap(proto, "compile", func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		c.checkPattern(fc.Argument(0))
		return callOrig(orig, fc.This, fc.Arguments...)
	})
	c.wrapConstructor("RegExp", func(args []goja.Value) {
		if len(args) > 0 {
			c.checkPattern(args[0])
		}
	})
	// These make a regular expression of a string argument.
	for _, name := range []string{"match", "matchAll", "search"} {
		c.wrap(c.object("String", "prototype"), name, func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
			if !hasMethod(fc.Argument(0), goja.SymMatch) {
				c.checkPattern(fc.Argument(0))
			}
			return callOrig(orig, fc.This, fc.Arguments...)
		})
	}
}

// timedMatch runs exec or test and stops the call when the match failed
// because it ran past RegexpMatchTimeout.
func (c *call) timedMatch(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	c.checkStop()
	start := time.Now()
	v := callOrig(orig, fc.This, fc.Arguments...)
	if (goja.IsNull(v) || v == goja.Value(c.vm.ToValue(false))) && time.Since(start) >= RegexpMatchTimeout {
		c.abort(fault.New(fault.BudgetExceeded, c.op.String(),
			"a regular expression match ran past its budget of %s (catastrophic backtracking)", RegexpMatchTimeout))
	}
	return v
}

// guardRegexpSymbols bounds what RegExp.prototype[Symbol.replace] builds,
// called directly or through String.prototype.replace and replaceAll
// (which leave the bounding to it): a replacement is counted as
// String.prototype.replace counts it. (Symbol.split's parts share the
// string they split; the watchdog bounds them.)
func (c *call) guardRegexpSymbols() {
	proto := c.object("RegExp", "prototype")
	c.wrapSymbol(proto, goja.SymReplace, "[Symbol.replace]", func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		re := fc.This
		if _, ok := re.(*goja.Object); !ok {
			return callOrig(orig, re, fc.Arguments...)
		}
		s := c.toStr(fc.Argument(0))
		viaRegexp := func(this goja.Value, args ...goja.Value) (goja.Value, error) { return orig(re, this, args[1]) }
		return c.boundedReplace(viaRegexp, s, re, fc.Argument(1), int64(s.Length())+1)
	})
}

// wrapSymbol is wrap for the method of obj under the symbol sym, shown to
// scripts as name.
func (c *call) wrapSymbol(obj *goja.Object, sym *goja.Symbol, name string, g guardFunc) {
	orig, ok := goja.AssertFunction(obj.GetSymbol(sym))
	if !ok {
		return
	}
	_ = obj.SetSymbol(sym, c.native(name, func(fc goja.FunctionCall) goja.Value { return g(orig, fc) }))
}

// guardJoins bounds the built-ins that join strings a script sets: an
// error's name and message, a regexp's source and flags, the elements of
// an array. Each step of a loop of s = String(e) with e.name = e.message
// = s doubled s in one copy no guard saw before it was made. (The
// operators that join strings, + and template literals, are rewritten:
// package internal/bigop.)
func (c *call) guardJoins() {
	c.wrap(c.object("Error", "prototype"), "toString", c.errorToString)
	c.wrap(c.object("RegExp", "prototype"), "toString", c.regexpToString)
	c.wrap(c.object("Array", "prototype"), "toLocaleString", c.arrayToLocaleString)
}

// errorToString is Error.prototype.toString, its result counted against
// the budget before it is made.
func (c *call) errorToString(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	o, ok := fc.This.(*goja.Object)
	if !ok {
		return callOrig(orig, fc.This) // the TypeError
	}
	name, msg := c.str("Error"), c.str("")
	if v := o.Get("name"); v != nil && !goja.IsUndefined(v) {
		name = c.toStr(v)
	}
	if v := o.Get("message"); v != nil && !goja.IsUndefined(v) {
		msg = c.toStr(v)
	}
	switch {
	case name.Length() == 0:
		return msg
	case msg.Length() == 0:
		return name
	}
	return c.joinStrings(name, c.str(": "), msg)
}

// regexpToString is RegExp.prototype.toString, its result counted
// against the budget before it is made.
func (c *call) regexpToString(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	o, ok := fc.This.(*goja.Object)
	if !ok {
		return callOrig(orig, fc.This) // the TypeError
	}
	source := c.toStr(o.Get("source"))
	flags := c.toStr(o.Get("flags"))
	slash := c.str("/")
	return c.joinStrings(slash, source, slash, flags)
}

// arrayToLocaleString is Array.prototype.toLocaleString: each element's
// toLocaleString, joined by commas, the result counted against the
// budget as it grows, in a loop that stops with the call.
func (c *call) arrayToLocaleString(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if isNullish(fc.This) {
		return callOrig(orig, fc.This) // the TypeError
	}
	o := fc.This.ToObject(c.vm)
	n := c.arrayLength(o)
	b := countedBuilder{c: c}
	comma := c.str(",")
	for i := int64(0); i < n; i++ {
		b.step(i)
		if i > 0 {
			b.write(comma)
		}
		next := o.Get(strconv.FormatInt(i, 10))
		if isNullish(next) {
			continue
		}
		m, ok := goja.AssertFunction(next.ToObject(c.vm).Get("toLocaleString"))
		if !ok {
			panic(c.vm.NewTypeError("toLocaleString is not a function"))
		}
		b.write(c.toStr(callOrig(m, next)))
	}
	return b.String()
}

// str is s as a script's string.
func (c *call) str(s string) goja.String { return c.vm.ToValue(s).(goja.String) }

// joinStrings concatenates parts once their length is counted against the
// budget.
func (c *call) joinStrings(parts ...goja.String) goja.Value {
	total := 0
	for _, p := range parts {
		total += p.Length()
	}
	c.need(float64(total) * bytesPerChar)
	var b goja.StringBuilder
	b.Grow(total)
	for _, p := range parts {
		b.WriteString(p)
	}
	return b.String()
}
