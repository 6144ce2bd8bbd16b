package jsonval

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
)

// MaxDepth is the deepest nesting of maps and slices Append and Size
// follow; a deeper value (or a map or slice that contains itself) makes
// them report false, and encoding/json decides.
const MaxDepth = 500

// Append appends the JSON encoding of v to dst, byte for byte as
// json.Marshal(v) writes it, and reports true; or reports false, with dst
// returned unchanged, when v is or holds a value outside the package's set
// (see the package documentation) or one json.Marshal rejects.
func Append(dst []byte, v any) ([]byte, bool) {
	out, ok := appendValue(dst, v, 0)
	if !ok {
		return dst, false
	}
	return out, true
}

func appendValue(dst []byte, v any, depth int) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return AppendString(dst, x), true
	case float64:
		return appendFloat(dst, x, 64)
	case bool:
		return strconv.AppendBool(dst, x), true
	case map[string]any:
		return appendMap(dst, x, depth)
	case []any:
		return appendSlice(dst, x, depth)
	case json.Number:
		s, ok := number(string(x))
		return append(dst, s...), ok
	case json.RawMessage:
		return AppendRaw(dst, x)
	}
	if out, ok := appendInteger(dst, v); ok {
		return out, true
	}
	return appendTyped(dst, v, depth)
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

// appendTyped appends the typed slices and maps Go code stores on boards.
func appendTyped(dst []byte, v any, depth int) ([]byte, bool) {
	switch x := v.(type) {
	case map[string]string:
		return AppendStringMap(dst, x), true
	case []string:
		return appendEach(dst, x, func(dst []byte, s string) ([]byte, bool) { return AppendString(dst, s), true })
	case []map[string]any:
		if depth >= MaxDepth {
			return dst, false
		}
		return appendEach(dst, x, func(dst []byte, m map[string]any) ([]byte, bool) { return appendMap(dst, m, depth+1) })
	case []int:
		return appendEach(dst, x, func(dst []byte, i int) ([]byte, bool) { return strconv.AppendInt(dst, int64(i), 10), true })
	case []int64:
		return appendEach(dst, x, func(dst []byte, i int64) ([]byte, bool) { return strconv.AppendInt(dst, i, 10), true })
	case []float64:
		return appendEach(dst, x, func(dst []byte, f float64) ([]byte, bool) { return appendFloat(dst, f, 64) })
	case []bool:
		return appendEach(dst, x, func(dst []byte, b bool) ([]byte, bool) { return strconv.AppendBool(dst, b), true })
	case []byte:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x)
		return append(dst, '"'), true
	}
	return dst, false
}

// appendEach appends s as a JSON array, each element by one.
func appendEach[E any](dst []byte, s []E, one func([]byte, E) ([]byte, bool)) ([]byte, bool) {
	if s == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '[')
	for i, e := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = one(dst, e); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

func appendSlice(dst []byte, s []any, depth int) ([]byte, bool) {
	if depth >= MaxDepth {
		return dst, false
	}
	return appendEach(dst, s, func(dst []byte, e any) ([]byte, bool) { return appendValue(dst, e, depth+1) })
}

func appendMap(dst []byte, m map[string]any, depth int) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	if depth >= MaxDepth {
		return dst, false
	}
	var buf [16]string
	keys := SortedKeys(buf[:0], m)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, k)
		dst = append(dst, ':')
		var ok bool
		if dst, ok = appendValue(dst, m[k], depth+1); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// AppendStringMap appends m as json.Marshal writes a map[string]string:
// "null" for a nil map, otherwise an object with sorted keys.
func AppendStringMap(dst []byte, m map[string]string) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	var buf [16]string
	keys := SortedKeys(buf[:0], m)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, k)
		dst = append(dst, ':')
		dst = AppendString(dst, m[k])
	}
	return append(dst, '}')
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
