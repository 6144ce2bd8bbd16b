package js

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

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

// rethrow re-raises an error returned by a goja.Callable inside the VM: a
// script exception stays catchable, an interrupt or stack overflow stays
// uncatchable.
func rethrow(err error) {
	if err != nil {
		panic(err)
	}
}

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

func (c *call) isArray(v goja.Value) bool {
	r, err := c.in.isArray(goja.Undefined(), v)
	return err == nil && r.ToBoolean()
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
