package js

import (
	"strconv"

	"github.com/dop251/goja"
)

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
	var b goja.StringBuilder
	total := float64(0)
	for i := int64(0); i < n; i++ {
		if i&1023 == 1023 {
			c.checkStop()
		}
		if i > 0 {
			total++
			c.need(total * bytesPerChar)
			b.WriteUTF8String(",")
		}
		next := o.Get(strconv.FormatInt(i, 10))
		if isNullish(next) {
			continue
		}
		m, ok := goja.AssertFunction(next.ToObject(c.vm).Get("toLocaleString"))
		if !ok {
			panic(c.vm.NewTypeError("toLocaleString is not a function"))
		}
		part := c.toStr(callOrig(m, next))
		total += float64(part.Length())
		c.need(total * bytesPerChar)
		b.WriteString(part)
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
