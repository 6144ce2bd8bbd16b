package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/fault"
)

// maxProblems is how many problems a validation error lists.
const maxProblems = 8

// Validate checks a JSON value (the arguments of a call) against s. The
// error is Validation and lists up to eight problems, each naming its place
// ("$.items[2].name: want string, got number").
func (s *Schema) Validate(raw []byte) error {
	v, err := decodeJSON(raw)
	if err != nil {
		return fault.Wrap(fault.Validation, err, "validate arguments", "not a JSON value")
	}
	return s.ValidateValue(v)
}

// ValidateValue checks a decoded JSON value (numbers as json.Number or
// float64) against s.
func (s *Schema) ValidateValue(v any) error {
	if msg := s.violations(v); msg != "" {
		return fault.New(fault.Validation, "validate arguments", "%s", msg)
	}
	return nil
}

// violations lists the problems of v, or returns "" when there are none.
func (s *Schema) violations(v any) string {
	var problems []string
	s.check(v, "$", &problems)
	if len(problems) > maxProblems {
		return strings.Join(problems[:maxProblems], "; ") + fmt.Sprintf("; and %d more", len(problems)-maxProblems)
	}
	return strings.Join(problems, "; ")
}

// check appends the problems of v at path.
func (s *Schema) check(v any, path string, problems *[]string) {
	if len(*problems) > maxProblems {
		return
	}
	if len(s.types) > 0 && !slices.ContainsFunc(s.types, func(t string) bool { return hasType(v, t) }) {
		*problems = append(*problems, fmt.Sprintf("%s: want %s, got %s", path, strings.Join(s.types, " or "), typeOf(v)))
		return
	}
	if s.enum != nil && !slices.ContainsFunc(s.enum, func(e any) bool { return jsonEqual(e, v) }) {
		*problems = append(*problems, fmt.Sprintf("%s: not one of the allowed values", path))
	}
	switch t := v.(type) {
	case map[string]any:
		s.checkObject(t, path, problems)
	case []any:
		if s.items != nil {
			for i, item := range t {
				s.items.check(item, fmt.Sprintf("%s[%d]", path, i), problems)
			}
		}
	}
}

func (s *Schema) checkObject(obj map[string]any, path string, problems *[]string) {
	for _, name := range s.required {
		if _, ok := obj[name]; !ok {
			*problems = append(*problems, fmt.Sprintf("%s.%s: required", path, name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		sub := path + "." + name
		if ps, ok := s.properties[name]; ok {
			ps.check(obj[name], sub, problems)
			continue
		}
		switch {
		case s.noAdd:
			*problems = append(*problems, fmt.Sprintf("%s: unknown property", sub))
		case s.additional != nil:
			s.additional.check(obj[name], sub, problems)
		}
	}
}

// hasType reports whether v is of the JSON type t.
func hasType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := number(v)
		return ok
	case "integer":
		n, ok := number(v)
		return ok && n.isInt()
	}
	return false
}

// maxExactDigits is the longest integer literal compared exactly; longer
// ones are compared as float64, so that a huge literal costs linear time.
const maxExactDigits = 64

// num is a JSON number: an integer literal exactly, anything else as a
// float64 (so that "1e999999999" costs no more than any other number).
type num struct {
	i   *big.Int // set for a short integer literal (no fraction, no exponent)
	f   float64
	lit bool // an integer literal of any length
}

// number returns v as a num when it is a JSON number.
func number(v any) (num, bool) {
	switch n := v.(type) {
	case json.Number:
		s := string(n)
		lit := !strings.ContainsAny(s, ".eE")
		if lit && len(s) <= maxExactDigits {
			if i, ok := new(big.Int).SetString(s, 10); ok {
				f, _ := new(big.Float).SetInt(i).Float64()
				return num{i: i, f: f, lit: true}, true
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return num{}, false
		}
		return num{f: f, lit: lit}, true
	case float64:
		return num{f: n}, true
	}
	return num{}, false
}

// isInt reports whether n has no fractional part.
func (n num) isInt() bool {
	return n.lit || (!math.IsInf(n.f, 0) && n.f == math.Trunc(n.f))
}

// equal compares two numbers: exactly when both are integer literals, as
// float64 otherwise.
func (n num) equal(o num) bool {
	if n.i != nil && o.i != nil {
		return n.i.Cmp(o.i) == 0
	}
	return n.f == o.f
}

// jsonEqual reports whether two decoded JSON values are equal, numbers by
// value (1 equals 1.0).
func jsonEqual(a, b any) bool {
	if na, ok := number(a); ok {
		nb, ok := number(b)
		return ok && na.equal(nb)
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonEqual)
	}
	return a == b
}

// typeOf names the JSON type of a decoded value.
func typeOf(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case json.Number, float64:
		if n, ok := number(t); ok && n.isInt() {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
