package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxProblems is how many problems a validation error lists.
const maxProblems = 8

// maxExactDigits is the longest number literal (without an exponent) that
// is kept exactly; a longer one, or one with an exponent, is taken as a
// float64, so that "1e999999" costs no more than any other number (exact
// arithmetic on it would take the validator seconds).
const maxExactDigits = 4096

var printer = message.NewPrinter(language.English)

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
// v's long and exponent numbers are replaced by float64 values.
func (s *Schema) violations(v any) string {
	if path, err := normalizeNumbers(&v, "$"); err != nil {
		return path + ": " + err.Error()
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "$: " + err.Error()
	}
	problems := leafProblems(ve, v)
	if len(problems) > maxProblems {
		return strings.Join(problems[:maxProblems], "; ") + fmt.Sprintf("; and %d more", len(problems)-maxProblems)
	}
	return strings.Join(problems, "; ")
}

// leafProblems describes the innermost errors of ve, sorted, each with its
// place: "$.a[2]" in the instance v, or a dotted path ("properties.a")
// when v is nil (ve is about a schema, checked against its metaschema).
func leafProblems(ve *jsonschema.ValidationError, v any) []string {
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		leaves = append(leaves, e)
	}
	walk(ve)
	slices.SortStableFunc(leaves, func(a, b *jsonschema.ValidationError) int {
		return compareLocations(a.InstanceLocation, b.InstanceLocation)
	})
	var out []string
	seen := map[string]bool{}
	for _, e := range leaves {
		for _, p := range describe1(e, v) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// compareLocations orders instance locations as they appear in a
// document: token by token, array indexes by number.
func compareLocations(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		x, errX := strconv.Atoi(a[i])
		y, errY := strconv.Atoi(b[i])
		if errX == nil && errY == nil {
			return x - y
		}
		return strings.Compare(a[i], b[i])
	}
	return len(a) - len(b)
}

// describe1 describes one innermost error.
func describe1(e *jsonschema.ValidationError, v any) []string {
	place := instancePath(e.InstanceLocation, v != nil)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var out []string
		for _, name := range k.Missing {
			out = append(out, instancePath(append(slices.Clone(e.InstanceLocation), name), v != nil)+": required")
		}
		return out
	case *kind.AdditionalProperties:
		var out []string
		for _, name := range k.Properties {
			out = append(out, instancePath(append(slices.Clone(e.InstanceLocation), name), v != nil)+": unknown property")
		}
		return out
	case *kind.Type:
		got := k.Got
		if v != nil {
			got = typeOf(valueAt(v, e.InstanceLocation))
		}
		return []string{fmt.Sprintf("%s: want %s, got %s", place, strings.Join(k.Want, " or "), got)}
	case *kind.Enum:
		if v == nil { // a schema: say what the keyword allows
			return []string{place + ": " + k.LocalizedString(printer)}
		}
		return []string{place + ": not one of the allowed values"}
	case *kind.Const:
		return []string{place + ": not the allowed value"}
	case *kind.FalseSchema:
		return []string{place + ": not allowed"}
	}
	return []string{place + ": " + e.ErrorKind.LocalizedString(printer)}
}

// instancePath renders a location: "$.a[2].b" for arguments, "a.2.b" for
// a schema.
func instancePath(loc []string, arguments bool) string {
	if !arguments {
		if len(loc) == 0 {
			return "schema"
		}
		return strings.Join(loc, ".")
	}
	var b strings.Builder
	b.WriteString("$")
	for _, tok := range loc {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		b.WriteString("." + tok)
	}
	return b.String()
}

// valueAt returns the value at loc in v (nil when there is none).
func valueAt(v any, loc []string) any {
	for _, tok := range loc {
		switch t := v.(type) {
		case map[string]any:
			v = t[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	return v
}

// normalizeNumbers replaces, in place, every json.Number of *v written
// with an exponent or longer than maxExactDigits by its float64 value.
// A number beyond float64's range is an error, reported with its place
// (path is the place of *v: "$" for arguments, "" for a schema).
func normalizeNumbers(v *any, path string) (string, error) {
	switch t := (*v).(type) {
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, "eE") && len(s) <= maxExactDigits {
			return "", nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
			return path, fmt.Errorf("number %s is out of range", abbreviate(s))
		}
		*v = f
	case map[string]any:
		for k, sub := range t {
			if at, err := normalizeNumbers(&sub, join(path, k)); err != nil {
				return at, err
			}
			t[k] = sub
		}
	case []any:
		for i := range t {
			if at, err := normalizeNumbers(&t[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return at, err
			}
		}
	}
	return "", nil
}

// typeOf names the JSON type of a decoded value; a number without a
// fractional part is an integer.
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
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			return "integer"
		}
		f, err := strconv.ParseFloat(s, 64)
		if err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	case float64:
		if !math.IsInf(t, 0) && t == math.Trunc(t) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
