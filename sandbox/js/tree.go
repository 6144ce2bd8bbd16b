package js

import (
	"slices"
	"unicode/utf8"

	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

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
