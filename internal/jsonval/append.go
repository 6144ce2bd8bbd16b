package jsonval

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MaxDepth is the deepest nesting of maps and slices Append and Size
// follow; a deeper value (or a map or slice that contains itself) makes
// them report false, and encoding/json decides.
const MaxDepth = 500

// Append appends the JSON encoding of v to dst, byte for byte as
// json.Marshal(v) writes it, and reports true; or reports false, with dst
// returned unchanged, when v is or holds a value outside the package's set
// (see the package documentation) or one json.Marshal rejects.
//
// Append keeps dst where it is: a caller's buffer on the stack stays there
// unless it has to grow.
func Append(dst []byte, v any) ([]byte, bool) {
	return AppendUpTo(dst, v, math.MaxInt)
}

// AppendUpTo is Append that also gives up, reporting false, once the
// result would be longer than limit bytes: for writing into a fixed buffer
// first, and measuring with Size only what does not fit. It checks between
// the elements of maps and slices, and before each string; a raw value or
// a typed slice is written whole before its length is noticed.
func AppendUpTo(dst []byte, v any, limit int) ([]byte, bool) {
	out, ok := appendValue(dst, v, 0, limit)
	if !ok || len(out) > limit {
		return dst, false
	}
	return out, true
}

// appendValue is the one recursive function of Append, and it calls only
// itself: the compiler's escape analysis sends to the heap a buffer that
// flows through a cycle of several functions, but not one that flows
// through a function calling itself.
func appendValue(dst []byte, v any, depth, limit int) ([]byte, bool) {
	if depth > MaxDepth {
		return dst, false
	}
	if f, isFloat := v.(float64); isFloat { // the commonest value, checked first
		return appendFloat(dst, f, 64)
	}
	ok := true
	switch x := v.(type) {
	case string:
		if len(dst)+len(x)+2 > limit { // give up before a long string grows dst
			return dst, false
		}
		return AppendString(dst, x), true
	case map[string]any:
		switch {
		case x == nil:
			return append(dst, "null"...), true
		case len(x) == 0:
			return append(dst, "{}"...), true
		case len(x) == 1: // nothing to sort
			for k, e := range x {
				dst = append(dst, '{')
				dst = AppendString(dst, k)
				dst = append(dst, ':')
				if dst, ok = appendValue(dst, e, depth+1, limit); !ok || len(dst) > limit {
					return dst, false
				}
				break // the only member: spares the iterator's search for another
			}
			return append(dst, '}'), true
		}
		var buf [smallMap]member[any]
		var orderBuf [smallMap]int32
		members, order := sortedMembers(buf[:0], orderBuf[:0], x)
		for i, j := range order {
			dst = append(dst, separator(i, '{')...)
			dst = AppendString(dst, members[j].key)
			dst = append(dst, ':')
			if dst, ok = appendValue(dst, members[j].value, depth+1, limit); !ok || len(dst) > limit {
				return dst, false
			}
		}
		return closeObject(dst, len(order)), true
	case []any:
		if x == nil {
			return append(dst, "null"...), true
		}
		for i, e := range x {
			dst = append(dst, separator(i, '[')...)
			if dst, ok = appendValue(dst, e, depth+1, limit); !ok || len(dst) > limit {
				return dst, false
			}
		}
		return closeArray(dst, len(x)), true
	case []map[string]any:
		if x == nil {
			return append(dst, "null"...), true
		}
		for i, m := range x {
			dst = append(dst, separator(i, '[')...)
			if dst, ok = appendValue(dst, m, depth+1, limit); !ok || len(dst) > limit {
				return dst, false
			}
		}
		return closeArray(dst, len(x)), true
	}
	return appendScalar(dst, v)
}

// appendScalar appends the values that hold no other values.
func appendScalar(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return AppendString(dst, x), true
	case float64:
		return appendFloat(dst, x, 64)
	case bool:
		return strconv.AppendBool(dst, x), true
	case json.Number:
		s, ok := number(string(x))
		if !ok {
			return dst, false
		}
		return append(dst, s...), true
	case json.RawMessage:
		return AppendRaw(dst, x)
	case map[string]string:
		return AppendStringMap(dst, x), true
	case []string:
		return appendStrings(dst, x), true
	case []byte:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x)
		return append(dst, '"'), true
	}
	if out, ok := appendInteger(dst, v); ok {
		return out, true
	}
	return appendNumbers(dst, v)
}

// appendInteger appends the integer kinds and float32.
func appendInteger(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), true
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(dst, x, 10), true
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case float32:
		return appendFloat(dst, float64(x), 32)
	}
	return dst, false
}

// appendNumbers appends the typed slices of numbers and bools.
func appendNumbers(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case []int:
		return appendInts(dst, x), true
	case []int64:
		return appendInts(dst, x), true
	case []bool:
		if x == nil {
			return append(dst, "null"...), true
		}
		for i, b := range x {
			dst = append(dst, separator(i, '[')...)
			dst = strconv.AppendBool(dst, b)
		}
		return closeArray(dst, len(x)), true
	case []float64:
		if x == nil {
			return append(dst, "null"...), true
		}
		start := len(dst)
		for i, f := range x {
			dst = append(dst, separator(i, '[')...)
			var ok bool
			if dst, ok = appendFloat(dst, f, 64); !ok {
				return dst[:start], false
			}
		}
		return closeArray(dst, len(x)), true
	}
	return dst, false
}

func appendInts[I int | int64](dst []byte, s []I) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	for i, n := range s {
		dst = append(dst, separator(i, '[')...)
		dst = strconv.AppendInt(dst, int64(n), 10)
	}
	return closeArray(dst, len(s))
}

func appendStrings(dst []byte, s []string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	for i, e := range s {
		dst = append(dst, separator(i, '[')...)
		dst = AppendString(dst, e)
	}
	return closeArray(dst, len(s))
}

// AppendStringMap appends m as json.Marshal writes a map[string]string:
// "null" for a nil map, otherwise an object with sorted keys.
func AppendStringMap(dst []byte, m map[string]string) []byte {
	switch {
	case m == nil:
		return append(dst, "null"...)
	case len(m) == 0:
		return append(dst, "{}"...)
	case len(m) == 1: // nothing to sort
		for k, v := range m {
			dst = append(dst, '{')
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			dst = AppendString(dst, v)
			break // the only member: spares the iterator's search for another
		}
		return append(dst, '}')
	}
	var buf [smallStringMap]member[string]
	var orderBuf [smallStringMap]int32
	members, order := sortedMembers(buf[:0], orderBuf[:0], m)
	for i, j := range order {
		dst = append(dst, separator(i, '{')...)
		dst = AppendString(dst, members[j].key)
		dst = append(dst, ':')
		dst = AppendString(dst, members[j].value)
	}
	return append(dst, '}')
}

// separator is what goes before element i of an array ('[') or an object
// ('{'): the opening bracket before the first, a comma before the others.
func separator(i int, open byte) string {
	switch {
	case i > 0:
		return ","
	case open == '[':
		return "["
	}
	return "{"
}

// closeArray ends an array of n elements; an empty one was never opened.
func closeArray(dst []byte, n int) []byte {
	if n == 0 {
		return append(dst, "[]"...)
	}
	return append(dst, ']')
}

// closeObject ends an object of n members; an empty one was never opened.
func closeObject(dst []byte, n int) []byte {
	if n == 0 {
		return append(dst, "{}"...)
	}
	return append(dst, '}')
}

// smallMap and smallStringMap are the most members a map[string]any and
// a map[string]string can have for Append and AppendStringMap to sort them
// without allocating.
const (
	smallMap       = 32
	smallStringMap = 16
)

// member is a key and its value in a map.
type member[V any] struct {
	key   string
	value V
}

// sortedMembers appends the members of m to members, and their indexes in
// key order to order. Sorting indexes rather than members moves no
// pointers, so the sort runs without the garbage collector's write
// barriers; taking each value with its key spares a lookup per key.
func sortedMembers[V any](members []member[V], order []int32, m map[string]V) ([]member[V], []int32) {
	for k, v := range m {
		order = append(order, int32(len(members)))
		members = append(members, member[V]{k, v})
	}
	if len(order) > 12 {
		slices.SortFunc(order, func(a, b int32) int { return strings.Compare(members[a].key, members[b].key) })
		return members, order
	}
	for i := 1; i < len(order); i++ { // insertion sort, cheapest for a few keys
		for j := i; j > 0 && members[order[j]].key < members[order[j-1]].key; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return members, order
}

// SortedKeys appends the keys of m to dst and sorts dst bytewise, the
// order json.Marshal writes map keys in. Passing a small array's slice as
// dst (buf[:0]) keeps small maps from allocating.
func SortedKeys[V any](dst []string, m map[string]V) []string {
	for k := range m {
		dst = append(dst, k)
	}
	slices.Sort(dst)
	return dst
}
