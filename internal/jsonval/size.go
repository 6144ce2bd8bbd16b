package jsonval

import (
	"encoding/base64"
	"encoding/json"
)

// Size is len(b) for the b that Append(nil, v) would return, computed
// without building it; ok is false exactly when Append reports false.
func Size(v any) (int64, bool) {
	return valueSize(v, 0)
}

func valueSize(v any, depth int) (int64, bool) {
	if depth > MaxDepth {
		return 0, false
	}
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return 4, true
		}
		n := int64(2 + max(len(x)-1, 0)) // braces and commas
		for k, e := range x {
			size, ok := valueSize(e, depth+1)
			if !ok {
				return 0, false
			}
			n += StringSize(k) + 1 + size
		}
		return n, true
	case []any:
		return eachSize(x, func(e any) (int64, bool) { return valueSize(e, depth+1) })
	case []map[string]any:
		return eachSize(x, func(m map[string]any) (int64, bool) { return valueSize(m, depth+1) })
	}
	return scalarSize(v)
}

func scalarSize(v any) (int64, bool) {
	switch x := v.(type) {
	case nil:
		return 4, true
	case string:
		return StringSize(x), true
	case float64:
		return floatSize(x, 64)
	case bool:
		return boolSize(x), true
	case json.Number:
		s, ok := number(string(x))
		return int64(len(s)), ok
	case json.RawMessage:
		return RawSize(x)
	case map[string]string:
		return StringMapSize(x), true
	case []string:
		return eachSize(x, func(s string) (int64, bool) { return StringSize(s), true })
	case []byte:
		if x == nil {
			return 4, true
		}
		return 2 + int64(base64.StdEncoding.EncodedLen(len(x))), true
	}
	if n, ok := integerSize(v); ok {
		return n, true
	}
	return numbersSize(v)
}

func boolSize(b bool) int64 {
	if b {
		return 4
	}
	return 5
}

func integerSize(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return intSize(int64(x)), true
	case int64:
		return intSize(x), true
	case int32:
		return intSize(int64(x)), true
	case int16:
		return intSize(int64(x)), true
	case int8:
		return intSize(int64(x)), true
	case uint:
		return uintSize(uint64(x)), true
	case uint64:
		return uintSize(x), true
	case uint32:
		return uintSize(uint64(x)), true
	case uint16:
		return uintSize(uint64(x)), true
	case uint8:
		return uintSize(uint64(x)), true
	case float32:
		return floatSize(float64(x), 32)
	}
	return 0, false
}

func numbersSize(v any) (int64, bool) {
	switch x := v.(type) {
	case []int:
		return eachSize(x, func(i int) (int64, bool) { return intSize(int64(i)), true })
	case []int64:
		return eachSize(x, func(i int64) (int64, bool) { return intSize(i), true })
	case []float64:
		return eachSize(x, func(f float64) (int64, bool) { return floatSize(f, 64) })
	case []bool:
		return eachSize(x, func(b bool) (int64, bool) { return boolSize(b), true })
	}
	return 0, false
}

// eachSize is the size of s as a JSON array whose elements measure one.
func eachSize[E any](s []E, one func(E) (int64, bool)) (int64, bool) {
	if s == nil {
		return 4, true
	}
	n := int64(2 + max(len(s)-1, 0)) // brackets and commas
	for _, e := range s {
		m, ok := one(e)
		if !ok {
			return 0, false
		}
		n += m
	}
	return n, true
}

// StringMapSize is len(AppendStringMap(nil, m)).
func StringMapSize(m map[string]string) int64 {
	if m == nil {
		return 4
	}
	n := int64(2 + max(len(m)-1, 0))
	for k, e := range m {
		n += StringSize(k) + 1 + StringSize(e)
	}
	return n
}
