package js

import (
	"math"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

// guardStrings bounds the String.prototype methods whose result can be
// much larger than their inputs.
func (c *call) guardStrings() {
	sp := c.object("String", "prototype")
	if sp == nil {
		return
	}
	c.wrap(sp, "repeat", c.repeat)
	c.wrap(sp, "padStart", c.pad)
	c.wrap(sp, "padEnd", c.pad)
	c.wrap(sp, "concat", c.concatStrings)
	c.wrap(sp, "split", c.split)
	c.wrap(sp, "replace", c.replace(false))
	c.wrap(sp, "replaceAll", c.replace(true))
	// Case mappings and normalization can lengthen a string: at most 3
	// times (ß to SS, ΐ to three), 4 (NFD) and 18 (NFKD of U+FDFA).
	for _, name := range []string{"toUpperCase", "toLowerCase", "toLocaleUpperCase", "toLocaleLowerCase", "normalize"} {
		factor := 3.0
		if name == "normalize" {
			factor = 18
		}
		c.wrap(sp, name, func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
			if !isNullish(fc.This) {
				c.need(float64(c.toStr(fc.This).Length()) * factor * bytesPerChar)
			}
			return callOrig(orig, fc.This, fc.Arguments...)
		})
	}
	c.wrap(c.object("String"), "raw", c.stringRaw)
}

// stringRaw is String.raw, written here so that its loop, which a length
// the script sets drives (String.raw({raw: {length: 1e9}})), stops with
// the call and its result is counted against the budget as it grows.
func (c *call) stringRaw(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	cooked := fc.Argument(0)
	if isNullish(cooked) {
		return callOrig(orig, fc.This, fc.Arguments...) // the TypeError
	}
	rawV := cooked.ToObject(c.vm).Get("raw")
	if isNullish(rawV) {
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	raw := rawV.ToObject(c.vm)
	n := c.arrayLength(raw)
	b := countedBuilder{c: c}
	for i := int64(0); i < n; i++ {
		b.step(i)
		b.write(c.toStr(raw.Get(strconv.FormatInt(i, 10))))
		if i+1 < n && int(i+1) < len(fc.Arguments) {
			b.write(c.toStr(fc.Arguments[i+1]))
		}
	}
	return b.String()
}

func isNullish(v goja.Value) bool { return v == nil || goja.IsUndefined(v) || goja.IsNull(v) }

// countedBuilder builds a string in a loop whose length a script sets:
// what it holds is counted against the call's budget before each write,
// and the loop stops with the call.
type countedBuilder struct {
	c     *call
	b     goja.StringBuilder
	total float64
}

// step is called at the top of the loop's step i.
func (cb *countedBuilder) step(i int64) {
	if i&1023 == 1023 {
		cb.c.checkStop()
	}
}

// write appends s once the total fits the budget.
func (cb *countedBuilder) write(s goja.String) {
	cb.total += float64(s.Length())
	cb.c.need(cb.total * bytesPerChar)
	cb.b.WriteString(s)
}

// String returns what was built.
func (cb *countedBuilder) String() goja.String { return cb.b.String() }

func (c *call) repeat(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if isNullish(fc.This) {
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	s := c.toStr(fc.This)
	n := fc.Argument(0).ToNumber()
	if f := n.ToFloat(); f > 0 && !math.IsInf(f, 1) {
		c.need(float64(s.Length()) * math.Trunc(f) * bytesPerChar)
	}
	return callOrig(orig, s, n)
}

func (c *call) pad(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if isNullish(fc.This) {
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	s := c.toStr(fc.This)
	n := fc.Argument(0).ToNumber()
	var fill goja.Value = goja.Undefined()
	if a := fc.Argument(1); !goja.IsUndefined(a) {
		fill = c.toStr(a)
	}
	empty := false
	if f, ok := fill.(goja.String); ok && f.Length() == 0 {
		empty = true
	}
	if f := n.ToFloat(); !empty && f > float64(s.Length()) {
		c.need(f * bytesPerChar)
	}
	return callOrig(orig, s, n, fill)
}

func (c *call) concatStrings(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if isNullish(fc.This) {
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	s := c.toStr(fc.This)
	total := float64(s.Length())
	args := make([]goja.Value, len(fc.Arguments))
	for i, a := range fc.Arguments {
		as := c.toStr(a)
		total += float64(as.Length())
		args[i] = as
	}
	c.need(total * bytesPerChar)
	return callOrig(orig, s, args...)
}

// hasMethod reports whether v is an object with a callable method under
// the symbol sym (a RegExp's Symbol.split, Symbol.replace).
func hasMethod(v goja.Value, sym *goja.Symbol) bool {
	o, ok := v.(*goja.Object)
	if !ok {
		return false
	}
	_, ok = goja.AssertFunction(o.GetSymbol(sym))
	return ok
}

// occurrences counts sub in s (sub empty: every position).
func occurrences(s, sub goja.String) int64 {
	if sub.Length() == 0 {
		return int64(s.Length()) + 1
	}
	return int64(strings.Count(s.String(), sub.String()))
}

func (c *call) split(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	sep, limit := fc.Argument(0), fc.Argument(1)
	if isNullish(fc.This) || isNullish(sep) || hasMethod(sep, goja.SymSplit) {
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	s, sepS := c.toStr(fc.This), c.toStr(sep)
	parts := float64(occurrences(s, sepS) + 1)
	if sepS.Length() == 0 {
		parts = float64(s.Length())
	}
	if !goja.IsUndefined(limit) {
		limit = c.vm.ToValue(uint32(limit.ToInteger()))
		parts = min(parts, limit.ToFloat())
	}
	c.need(parts * bytesPerPart)
	return callOrig(orig, s, sepS, limit)
}

// replace bounds String.prototype.replace and replaceAll: a replacement
// function is wrapped to count what it returns; a replacement string is
// passed on when the largest result it can give fits the budget, and
// otherwise expanded in Go, counting, as a replacement function.
func (c *call) replace(all bool) guardFunc {
	return func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		search, repl := fc.Argument(0), fc.Argument(1)
		if isNullish(fc.This) {
			return callOrig(orig, fc.This, fc.Arguments...)
		}
		if hasMethod(search, goja.SymReplace) {
			// A RegExp's Symbol.replace bounds itself (guardRegexpSymbols);
			// another object's is script code.
			return callOrig(orig, fc.This, fc.Arguments...)
		}
		s, searchS := c.toStr(fc.This), c.toStr(search)
		matches := occurrences(s, searchS)
		if !all {
			matches = min(matches, 1)
		}
		return c.boundedReplace(orig, s, searchS, repl, matches)
	}
}

func (c *call) boundedReplace(orig goja.Callable, s goja.String, search, repl goja.Value, matches int64) goja.Value {
	total := float64(s.Length())
	if f, ok := goja.AssertFunction(repl); ok {
		counting := func(fc goja.FunctionCall) goja.Value {
			c.checkStop()
			out := c.toStr(callOrig(f, goja.Undefined(), fc.Arguments...))
			total += float64(out.Length())
			c.need(total * bytesPerChar)
			return out
		}
		return callOrig(orig, s, search, c.vm.ToValue(counting))
	}
	r := c.toStr(repl)
	if !strings.Contains(r.String(), "$") && (total+float64(matches)*float64(r.Length()))*bytesPerChar <= float64(c.budget()) {
		return callOrig(orig, s, search, r)
	}
	expand := func(fc goja.FunctionCall) goja.Value {
		c.checkStop()
		out := c.substitute(r, fc.Arguments)
		total += float64(out.Length())
		c.need(total * bytesPerChar)
		return out
	}
	return callOrig(orig, s, search, c.vm.ToValue(expand))
}

// substitute expands a replacement template ($$, $&, $`, $', $n, $nn,
// $<name>) for one match, given the arguments a replacement function gets:
// the match, the captures, the position, the string and, with named
// groups, the groups object.
func (c *call) substitute(tpl goja.String, args []goja.Value) goja.String {
	n := len(args)
	strIdx := n - 1
	var groups *goja.Object
	if n >= 4 {
		if _, ok := args[n-1].(goja.String); !ok {
			groups, _ = args[n-1].(*goja.Object)
			strIdx = n - 2
		}
	}
	matched, str := c.toStr(args[0]), c.toStr(args[strIdx])
	pos := int(args[strIdx-1].ToInteger())
	captures := args[1 : strIdx-1]
	var b goja.StringBuilder
	l := tpl.Length()
	for i := 0; i < l; i++ {
		ch := tpl.CharAt(i)
		if ch != '$' || i+1 >= l {
			b.WriteString(tpl.Substring(i, i+1))
			continue
		}
		next := tpl.CharAt(i + 1)
		switch {
		case next == '$':
			b.WriteString(tpl.Substring(i, i+1))
			i++
		case next == '&':
			b.WriteString(matched)
			i++
		case next == '`':
			b.WriteString(str.Substring(0, min(max(pos, 0), str.Length())))
			i++
		case next == '\'':
			b.WriteString(str.Substring(min(max(pos+matched.Length(), 0), str.Length()), str.Length()))
			i++
		case next >= '0' && next <= '9':
			i += c.writeCapture(&b, tpl, i, captures)
		case next == '<' && groups != nil:
			end := i + 2
			for end < l && tpl.CharAt(end) != '>' {
				end++
			}
			if end >= l {
				b.WriteString(tpl.Substring(i, i+1))
				continue
			}
			if v := groups.Get(tpl.Substring(i+2, end).String()); !isNullish(v) {
				b.WriteString(c.toStr(v))
			}
			i = end
		default:
			b.WriteString(tpl.Substring(i, i+1))
		}
	}
	return b.String()
}

// writeCapture writes the capture $n or $nn at tpl[i] and returns how
// many characters after the '$' it used; a reference to no capture is
// written as it is.
func (c *call) writeCapture(b *goja.StringBuilder, tpl goja.String, i int, captures []goja.Value) int {
	d1 := int(tpl.CharAt(i+1) - '0')
	if i+2 < tpl.Length() {
		if ch := tpl.CharAt(i + 2); ch >= '0' && ch <= '9' {
			if nn := d1*10 + int(ch-'0'); nn >= 1 && nn <= len(captures) {
				if v := captures[nn-1]; !isNullish(v) {
					b.WriteString(c.toStr(v))
				}
				return 2
			}
		}
	}
	if d1 >= 1 && d1 <= len(captures) {
		if v := captures[d1-1]; !isNullish(v) {
			b.WriteString(c.toStr(v))
		}
		return 1
	}
	b.WriteString(tpl.Substring(i, i+1))
	return 0
}

// loopingArrayMethods are the Array.prototype methods that loop in Go over
// length, which a script sets freely (a = []; a.length = 1e9): they refuse
// a length past the budget's element count.
var loopingArrayMethods = [...]string{
	"copyWithin", "every", "fill", "filter", "find", "findIndex", "findLast", "findLastIndex",
	"forEach", "includes", "indexOf", "lastIndexOf", "map", "reduce", "reduceRight", "reverse", "shift",
	"slice", "some", "splice", "toLocaleString", "toReversed", "toSpliced", "unshift", "with",
}

func (c *call) guardArrays() {
	proto := c.object("Array", "prototype")
	if proto == nil {
		return
	}
	for _, name := range loopingArrayMethods {
		c.wrap(proto, name, c.lengthGuard)
	}
	for _, name := range []string{"sort", "toSorted"} {
		c.wrap(proto, name, c.sortGuard)
	}
	c.wrap(proto, "join", c.join)
	c.wrap(proto, "concat", c.concatArrays)
	c.wrap(proto, "flat", c.flat)
	c.wrap(proto, "flatMap", c.flatMap)
	c.wrap(c.object("Array"), "from", c.arrayFrom)
	c.wrap(c.object("Function", "prototype"), "apply", c.argsGuard(1))
	reflect := c.object("Reflect")
	c.wrap(reflect, "apply", c.argsGuard(2))
	c.wrap(reflect, "construct", c.argsGuard(1))
	// Native loops that consume an iterator (spread, Array.from, for-of)
	// call next: a stopped call ends them there.
	for _, v := range []goja.Value{c.vm.NewArray(), c.vm.ToValue("")} {
		if p := c.iteratorProto(v); p != nil {
			c.wrap(p, "next", c.stepGuard)
		}
	}
}

func (c *call) stepGuard(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	c.checkStop()
	return callOrig(orig, fc.This, fc.Arguments...)
}

// thisLength is the length a generic array method will loop over.
func (c *call) thisLength(this goja.Value) int64 {
	switch t := this.(type) {
	case *goja.Object:
		return c.arrayLength(t)
	case goja.String:
		return int64(t.Length())
	}
	return 0
}

func (c *call) lengthGuard(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	this, n := c.pinLength(fc.This)
	c.needElements(n)
	return unpin(callOrig(orig, this, fc.Arguments...), this, fc.This)
}

// sortGuard bounds sort and toSorted: without a comparator the whole sort
// is one native step, so the array may have sortsPerElement times fewer
// elements.
func (c *call) sortGuard(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	this, n := c.pinLength(fc.This)
	if _, ok := goja.AssertFunction(fc.Argument(0)); !ok {
		n *= sortsPerElement
	}
	c.needElements(n)
	return unpin(callOrig(orig, this, fc.Arguments...), this, fc.This)
}

// join is Array.prototype.join, written here so that the result is
// counted against the budget as it grows (elements may repeat one large
// string). A cycle joins as "", as in other engines.
func (c *call) join(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if isNullish(fc.This) {
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	o := fc.This.ToObject(c.vm)
	n := c.arrayLength(o)
	c.needElements(n)
	for _, j := range c.joining {
		if j == o {
			return c.vm.ToValue("")
		}
	}
	if len(c.joining) >= c.maxNesting() {
		c.abort(c.limitError(sandbox.LimitStack))
	}
	c.joining = append(c.joining, o)
	defer func() { c.joining = c.joining[:len(c.joining)-1] }()
	sep := c.toStr(c.vm.ToValue(","))
	if a := fc.Argument(0); !goja.IsUndefined(a) {
		sep = c.toStr(a)
	}
	var b goja.StringBuilder
	total := float64(0)
	for i := int64(0); i < n; i++ {
		if i > 0 {
			b.WriteString(sep)
			total += float64(sep.Length())
		}
		if i&1023 == 1023 {
			c.checkStop()
		}
		v := o.Get(strconv.FormatInt(i, 10))
		if isNullish(v) {
			continue
		}
		s := c.toStr(v)
		total += float64(s.Length())
		c.need(total * bytesPerChar)
		b.WriteString(s)
	}
	c.need(total * bytesPerChar)
	return b.String()
}

// hasInstance is OrdinaryHasInstance(this, O): whether this.prototype is
// on O's prototype chain, the chain walked with a stop check.
func (c *call) hasInstance(fc goja.FunctionCall) goja.Value {
	ctor, ok := fc.This.(*goja.Object)
	if _, callable := goja.AssertFunction(fc.This); !ok || !callable {
		return c.vm.ToValue(false)
	}
	o, ok := fc.Argument(0).(*goja.Object)
	if !ok {
		return c.vm.ToValue(false)
	}
	proto, ok := ctor.Get("prototype").(*goja.Object)
	if !ok {
		panic(c.vm.NewTypeError("Function has non-object prototype in instanceof check"))
	}
	for i := 0; ; i++ {
		if i&1023 == 1023 {
			c.checkStop()
		}
		if o = o.Prototype(); o == nil {
			return c.vm.ToValue(false)
		}
		if o.SameAs(proto) {
			return c.vm.ToValue(true)
		}
	}
}
