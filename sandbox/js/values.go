package js

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

// fromJSON turns JSON text (made by Go) into a fresh JS value with the VM's
// own JSON.parse; nothing Go-backed reaches the script.
func (c *call) fromJSON(data []byte) goja.Value {
	if len(data) == 0 {
		return goja.Undefined()
	}
	v, err := c.in.parse(goja.Undefined(), c.vm.ToValue(string(data)))
	rethrow(err)
	return v
}

// fromGo marshals a JSON-compatible Go value and returns it as a fresh JS
// value. JSON longer than max stops the call with the limit named.
func (c *call) fromGo(v any, max int64, limit string) goja.Value {
	if pv, ok := c.fromPrimitive(v, max); ok {
		return pv
	}
	if tv, ok := c.fromGoTree(v, max, limit, false); ok {
		return tv
	}
	return c.fromGoJSON(v, max, limit)
}

// fromGoFrozen is fromGo with every object and array of the value frozen.
func (c *call) fromGoFrozen(v any, max int64, limit string) goja.Value {
	if tv, ok := c.fromGoTree(v, max, limit, true); ok {
		return tv
	}
	return c.deepFreeze(c.fromGo(v, max, limit))
}

// deepFreeze freezes v and every object reachable through its own
// properties (v is a fresh JSON value).
func (c *call) deepFreeze(v goja.Value) goja.Value {
	o, ok := v.(*goja.Object)
	if !ok {
		return v
	}
	for _, k := range o.Keys() {
		c.deepFreeze(o.Get(k))
	}
	c.freeze(o)
	return v
}

// maxTreeDepth is how deep fromTree goes before it leaves a value to the
// JSON route.
const maxTreeDepth = 64

// fromGoTree is fromGo for a map[string]any or []any of JSON values,
// made into script objects and arrays directly rather than through JSON
// text (json.Marshal and the VM's JSON.parse, several times slower): the
// same value, with an object's keys in the sorted order JSON.parse of
// json.Marshal's text gives them, made only when its JSON fits in max.
// frozen freezes every object and array made. ok is false for a value it
// leaves to the JSON route: another Go type, NaN or an infinity, text that
// is not UTF-8, nesting deeper than maxTreeDepth.
func (c *call) fromGoTree(v any, max int64, limit string, frozen bool) (goja.Value, bool) {
	switch v.(type) {
	case map[string]any, []any:
	default:
		return nil, false
	}
	size, err := sandbox.JSONBytes(v)
	if err != nil {
		return nil, false
	}
	if size > max {
		c.abort(c.limitError(limit))
	}
	if !plainTree(v, 0) {
		return nil, false
	}
	return c.tree(v, frozen), true
}

// plainTree reports whether fromGoTree can make v directly.
func plainTree(v any, depth int) bool {
	if depth > maxTreeDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool:
		return true
	case float64:
		return x == x && x-x == 0 // neither NaN nor an infinity
	case string:
		return utf8.ValidString(x)
	case map[string]any:
		if x == nil {
			return false // null in JSON: left to the JSON route
		}
		for k, e := range x {
			if !utf8.ValidString(k) || !plainTree(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !plainTree(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// tree makes a value plainTree accepted.
func (c *call) tree(v any, frozen bool) goja.Value {
	switch x := v.(type) {
	case nil:
		return goja.Null()
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		o := c.vm.NewObject()
		if !frozen {
			for _, k := range keys {
				_ = o.DefineDataProperty(k, c.tree(x[k], frozen), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
			}
			return o
		}
		// Frozen from the start: read-only, fixed properties, then no new
		// ones (what Object.freeze makes, without its walk over them).
		for _, k := range keys {
			_ = o.DefineDataProperty(k, c.tree(x[k], frozen), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		}
		_, err := c.in.preventExtensions(goja.Undefined(), o)
		rethrow(err)
		return o
	case []any:
		items := make([]any, len(x))
		for i, e := range x {
			items[i] = c.tree(e, frozen)
		}
		a := c.vm.NewArray(items...)
		if frozen {
			c.freeze(a)
		}
		return a
	}
	return c.vm.ToValue(v) // bool, float64, string
}

// fromGoJSON is fromGo through JSON text: json.Marshal, then the VM's
// JSON.parse.
func (c *call) fromGoJSON(v any, max int64, limit string) goja.Value {
	data, err := json.Marshal(v)
	if err != nil {
		c.throw(fault.Wrap(fault.Internal, err, "board", "node %q: value is not JSON-compatible", c.node))
	}
	if int64(len(data)) > max {
		c.abort(c.limitError(limit))
	}
	return c.fromJSON(data)
}

// toJSON turns a script value into JSON text of at most max bytes, as
// JSON.stringify would (undefined, functions and symbols become null).
// A longer value stops the call with the limit named; a value JSON cannot
// represent (a cycle, a BigInt) throws a TypeError to the script.
func (c *call) toJSON(v goja.Value, max int64, limit string) []byte {
	out := c.stringify(v, nil, nil, max, limit)
	if goja.IsUndefined(out) {
		return []byte("null")
	}
	return []byte(out.String())
}

// toGo turns a script value into a Go value through JSON (map[string]any,
// []any, float64, string, bool, nil), at most max bytes of it.
func (c *call) toGo(v goja.Value, max int64, limit string) any {
	if n, out, ok := primitiveJSONIn(v, c.rt.numbers); ok && n <= max {
		return out
	}
	return c.decodeValue(c.toJSON(v, max, limit))
}

// toValue is the size of toJSON's text and its decoded Go value, at once.
func (c *call) toValue(v goja.Value, max int64, limit string) (int64, any) {
	if n, out, ok := primitiveJSONIn(v, c.rt.numbers); ok && n <= max {
		return n, out
	}
	data := c.toJSON(v, max, limit)
	return int64(len(data)), c.decodeValue(data)
}

// primitiveJSON is the size of the JSON text JSON.stringify makes of a
// number, a boolean, a string, null or undefined, and the Go value
// decoding that text gives, both found without making the text; ok is
// false for anything else (objects, symbols, BigInts) and for a string
// holding U+FFFD (which may stand for a lone surrogate, written as an
// escape).
func primitiveJSON(v goja.Value) (size int64, out any, ok bool) {
	return primitiveJSONIn(v, nil)
}

// primitiveJSONIn is primitiveJSON taking the small integers' Go values
// from numbers (newNumbers), made once rather than for each value.
func primitiveJSONIn(v goja.Value, numbers []any) (size int64, out any, ok bool) {
	if isNullish(v) {
		return 4, nil, true
	}
	switch x := v.(type) {
	case *goja.Object, *goja.Symbol:
		return 0, nil, false
	case goja.String:
		text := x.String()
		if strings.ContainsRune(text, utf8.RuneError) {
			return 0, nil, false
		}
		return quotedLen(text), text, true
	}
	// By the exported type, so that reading the number boxes nothing.
	switch v.ExportType() {
	case reflect.TypeFor[bool]():
		if v.ToBoolean() {
			return 4, true, true
		}
		return 5, false, true
	case reflect.TypeFor[int64]():
		x := v.ToInteger()
		if x >= 0 && x < int64(len(numbers)) {
			return decimalLen(x), numbers[x], true
		}
		return decimalLen(x), float64(x), true
	case reflect.TypeFor[float64]():
		if x := v.ToFloat(); math.IsNaN(x) || math.IsInf(x, 0) {
			return 4, nil, true
		}
		text := v.String() // JSON.stringify writes a finite number as String does
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return 0, nil, false
		}
		return int64(len(text)), f, true
	}
	return 0, nil, false
}

// quotedLen is the length in UTF-8 of JSON.stringify(s) for a string
// without lone surrogates: the quotes, \b \t \n \f \r \" and \\ in two
// characters, other control characters in six.
func quotedLen(s string) int64 {
	n := int64(len(s)) + 2
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b == '"' || b == '\\' || b == '\b' || b == '\t' || b == '\n' || b == '\f' || b == '\r':
			n++
		case b < 0x20:
			n += 5
		}
	}
	return n
}

// fromPrimitive is fromGo of a JSON primitive (nil, a bool, a finite
// float64, a short valid UTF-8 string), made without JSON text: the value
// is the same.
func (c *call) fromPrimitive(v any, max int64) (goja.Value, bool) {
	switch x := v.(type) {
	case nil:
		return goja.Null(), max >= 4
	case bool:
		return c.vm.ToValue(x), max >= 5
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false
		}
		return c.vm.ToValue(x), max >= 32
	case string:
		// At most 6 bytes of JSON a byte (\u00XX), and the quotes.
		if int64(len(x))*6+2 > max || !utf8.ValidString(x) {
			return nil, false
		}
		return c.vm.ToValue(x), true
	}
	return nil, false
}

// decodeValue decodes the JSON form of a script value.
func (c *call) decodeValue(data []byte) any {
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		c.throw(fault.Wrap(fault.Internal, err, "value", "node %q: decode script value", c.node))
	}
	return out
}

func (c *call) isArray(v goja.Value) bool {
	r, err := c.in.isArray(goja.Undefined(), v)
	return err == nil && r.ToBoolean()
}

// smallNumbers is how many integers, from 0, newNumbers holds.
const smallNumbers = 1024

// newNumbers returns the Go values (float64) of the integers 0 to
// smallNumbers-1 in interfaces, read-only: a board write of a small
// integer stores one of them instead of allocating its own.
func newNumbers() []any {
	out := make([]any, smallNumbers)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

// decimalLen is the length of x in decimal, its sign included: the
// length of strconv.FormatInt(x, 10), without making the text.
func decimalLen(x int64) int64 {
	n, u := int64(1), uint64(x)
	if x < 0 {
		n, u = 2, -u
	}
	for ; u >= 10; u /= 10 {
		n++
	}
	return n
}

// unaddressed replaces goja's text for an object it cannot convert to a
// primitive, which prints the object's Go value and its heap address (a
// value no replay sees again, and the host's to keep), with V8's.
func unaddressed(msg string) string {
	const head, tail = "Could not convert &{", " to primitive"
	i := strings.Index(msg, head)
	j := strings.LastIndex(msg, tail)
	if i < 0 || j < i {
		return msg
	}
	return msg[:i] + "Cannot convert object to primitive value" + msg[j+len(tail):]
}

// localeCompare bounds String.prototype.localeCompare, whose collation
// allocates about 16 bytes a character of both strings in one step.
func (c *call) localeCompare(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if isNullish(fc.This) {
		return callOrig(orig, fc.This, fc.Arguments...)
	}
	a, b := c.toStr(fc.This), c.toStr(fc.Argument(0)) // converted once
	c.need(float64(a.Length()+b.Length()) * bytesPerCollatedChar)
	return callOrig(orig, a, append([]goja.Value{b}, fc.Arguments[min(1, len(fc.Arguments)):]...)...)
}

// guardEncoders bounds encodeURI, encodeURIComponent and escape, which
// write up to 9 characters for each UTF-16 unit of their input (6 for
// escape) in one step: each counts the characters it will write, from its
// input, before it writes them.
func (c *call) guardEncoders() {
	global := c.vm.GlobalObject()
	for name, width := range map[string]func(uint16) int{
		"encodeURI": uriWidth, "encodeURIComponent": uriWidth, "escape": escapeWidth,
	} {
		c.wrap(global, name, func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
			s := c.toStr(fc.Argument(0)) // converted once
			n := 0
			for i := range s.Length() {
				n += width(uint16(s.CharAt(i)))
			}
			c.need(float64(n) * bytesPerChar)
			return callOrig(orig, fc.This, s)
		})
	}
}

// uriWidth is at most how many characters encodeURI writes for the UTF-16
// unit u: itself, or %XX for each byte of its UTF-8 (a surrogate pair
// makes four bytes, six characters a unit).
func uriWidth(u uint16) int {
	switch {
	case u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u >= '0' && u <= '9':
		return 1
	case u < 0x80:
		return 3
	case u < 0x800, u >= 0xD800 && u <= 0xDFFF:
		return 6
	}
	return 9
}

// escapeWidth is at most how many characters escape writes for the UTF-16
// unit u: %XX, or %uXXXX.
func escapeWidth(u uint16) int {
	if u < 0x100 {
		return 3
	}
	return 6
}
